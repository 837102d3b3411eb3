#!/bin/sh
# Enables and starts nvidia-persistenced (NVIDIA's way to keep persistence mode). Where the
# daemon cannot run (no systemd as PID 1, no unit), falls back to the driver's legacy
# `nvidia-smi -pm 1`, which does not survive a reboot.
# Fixes: node.persistenced.enabled, node.persistenced.active, node.persistenced.running,
#        node.gpu.persistence_mode
# Usage: persistenced.sh [--apply]
. "$(dirname "$0")/lib.sh"
U=nvidia-persistenced.service
pid1=$(cat "$ROOT/proc/1/comm" 2>/dev/null || true)
if [ "$pid1" = systemd ] && has systemctl && in_root systemctl show -p LoadState "$U" 2>/dev/null | grep -qx LoadState=loaded; then
  [ "$(in_root systemctl is-enabled "$U" 2>/dev/null || true)" = enabled ] || run systemctl enable "$U"
  in_root systemctl --quiet is-active "$U" 2>/dev/null || run systemctl start "$U"
elif has nvidia-smi; then
  off=$(in_root nvidia-smi --query-gpu=index,persistence_mode --format=csv,noheader 2>/dev/null | grep -cv ', Enabled$' || true)
  if [ "${off:-0}" != 0 ]; then
    say "nvidia-persistenced cannot run here (PID 1 is ${pid1:-unknown}, or no $U): legacy persistence mode"
    run nvidia-smi -pm 1
  fi
else
  fail "neither $U under systemd nor nvidia-smi on the target"
fi
finish
