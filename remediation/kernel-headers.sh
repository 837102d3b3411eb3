#!/bin/sh
# Installs the headers of the RUNNING kernel, so DKMS can build the driver for it: on the RHEL
# family the -devel package of the running kernel's package (kernel-lt-devel-$(uname -r) on
# RED OS), past dnf.conf's `exclude=kernel*` (--disableexcludes=all, the article's reason to
# comment it out); on Debian/Ubuntu linux-headers-$(uname -r).
# Fixes: node.kernel.headers
# Usage: [KERNEL=$(uname -r)] kernel-headers.sh [--apply]
. "$(dirname "$0")/lib.sh"
K=${KERNEL:-$(in_root uname -r)}
if in_root test -d "/lib/modules/$K/build"; then finish; exit 0; fi
if has dnf || has yum; then
  pm=dnf; has dnf || pm=yum
  name=$(in_root rpm -qa --qf '%{NAME} %{VERSION} %{RELEASE} %{ARCH}\n' 'kernel*' | awk -v k="$K" '
    $1 !~ /-(devel|headers|core|modules.*|tools.*)$/ && (k == $2 "-" $3 "." $4 || k == $2 "." $3 "." $4) { print $1; exit }')
  run $pm install -y --disableexcludes=all "${name:-kernel}-devel-$K"
elif has apt-get; then
  run apt-get install -y "linux-headers-$K"
else
  fail "neither dnf/yum nor apt-get on the target: install the headers of $K by hand"
fi
finish
