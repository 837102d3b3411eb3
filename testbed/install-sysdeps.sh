#!/usr/bin/env bash
# Installs the Debian packages the simulated platform needs, only when missing.
set -euo pipefail
need=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need+=(openssh-server openssh-client)
[ -x /bin/busybox ] || need+=(busybox-static)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
# The report selftests render the HTML report in a real browser (headless Debian chromium; a
# font so its screenshots show text).
if [ ! -x /usr/bin/chromium ] || [ ! -d /usr/share/fonts/truetype/dejavu ]; then
  echo "installing: chromium fonts-dejavu-core"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
fi
