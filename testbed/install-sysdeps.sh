#!/usr/bin/env bash
# Installs the Debian packages the simulated platform and the selftests need, only when missing:
#   sshd + ssh client and busybox (simulated GPU hosts), iproute2 (their network namespaces),
#   gcc (dex is built with cgo), chromium + a font (the report is read back from a real browser).
set -euo pipefail
need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 || need+=(openssh-client)
[ -x /bin/busybox ] || need+=(busybox-static)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -d /usr/share/fonts/truetype/dejavu ] || need+=(fonts-dejavu-core)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
