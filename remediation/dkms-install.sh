#!/bin/sh
# Builds and installs the NVIDIA module with DKMS for the running kernel (the article's fix once
# the linker runs again): dkms install -m <module> -v <version> -k <kernel>.
# Fixes: node.dkms.nvidia_installed
# Usage: NVIDIA_VERSION=580.95.05 [DKMS_MODULE=nvidia] [KERNEL=$(uname -r)] dkms-install.sh [--apply]
. "$(dirname "$0")/lib.sh"
: "${NVIDIA_VERSION:?set NVIDIA_VERSION, the driver version DKMS must install}"
M=${DKMS_MODULE:-nvidia}
K=${KERNEL:-$(in_root uname -r)}
has dkms || fail "dkms is not installed on the target"
status=$(in_root dkms status -m "$M" 2>/dev/null || true)
if printf '%s\n' "$status" | grep -Eq "^$M[/,] ?$NVIDIA_VERSION, $K, [^:]*: installed"; then
  finish; exit 0
fi
if printf '%s\n' "$status" | grep -Eq "^$M[/,] ?$NVIDIA_VERSION([,:].*)?: broken"; then
  fail "dkms lost the $M $NVIDIA_VERSION source (dkms status: broken): reinstall the driver package of $NVIDIA_VERSION"
fi
printf '%s\n' "$status" | grep -Eq "^$M[/,] ?$NVIDIA_VERSION[,:]" ||
  fail "dkms has no $M $NVIDIA_VERSION source (dkms status: ${status:-empty}): reinstall the driver package of $NVIDIA_VERSION"
run dkms install -m "$M" -v "$NVIDIA_VERSION" -k "$K"
if [ "$APPLY" = 1 ] && [ "$(in_root uname -r)" = "$K" ] && ! grep -q "  $NVIDIA_VERSION  " "$ROOT/proc/driver/nvidia/version" 2>/dev/null; then
  reboot_required "the loaded driver is not $NVIDIA_VERSION; the new module loads at the next boot"
fi
finish
