#!/bin/sh
# Pins NVIDIA fabric manager to the driver's version (it refuses to start otherwise) and starts
# it: dnf install nvidia-fabric-manager-<version> on the RHEL family, apt-get install
# nvidia-fabricmanager-<branch>=<version>-1 on Debian/Ubuntu.
# Fixes: node.fabricmanager.version, node.fabricmanager.active
# Usage: NVIDIA_VERSION=580.95.05 fabricmanager.sh [--apply]
. "$(dirname "$0")/lib.sh"
: "${NVIDIA_VERSION:?set NVIDIA_VERSION, the driver version fabric manager must equal}"
V=$NVIDIA_VERSION U=nvidia-fabricmanager.service
if has rpm && ! has dpkg-query; then
  have=$(in_root rpm -qa --qf '%{VERSION}\n' 'nvidia-fabric*manager*' | head -n 1)
  pm=dnf; has dnf || pm=yum
  [ "$have" = "$V" ] || run $pm install -y "nvidia-fabric-manager-$V"
else
  # installed only: dpkg also lists a package removed but not purged (rc) with its old version
  have=$(in_root dpkg-query -W -f '${db:Status-Abbrev}${Version}\n' "nvidia-fabricmanager-${V%%.*}" 2>/dev/null | head -n 1)
  [ "${have%-*}" = "ii $V" ] || run apt-get install -y --allow-downgrades "nvidia-fabricmanager-${V%%.*}=$V-1"
fi
if has systemctl; then
  [ "$(in_root systemctl is-enabled "$U" 2>/dev/null || true)" = enabled ] || run systemctl enable "$U"
  if [ "$CHANGED" = 1 ] || ! in_root systemctl --quiet is-active "$U" 2>/dev/null; then
    run systemctl restart "$U"
  fi
fi
finish
