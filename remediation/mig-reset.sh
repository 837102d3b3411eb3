#!/bin/sh
# MIG mode changes wait for a GPU reset. This script changes nothing: it names the GPUs whose
# MIG mode is pending and how to apply it (drain the node, stop the GPU's clients, reset it).
# Fixes: node.mig.no_pending (after the reset or reboot it asks for)
# Usage: mig-reset.sh [--apply]
. "$(dirname "$0")/lib.sh"
has nvidia-smi || fail "nvidia-smi is not installed on the target"
pending=$(in_root nvidia-smi --query-gpu=index,mig.mode.current,mig.mode.pending --format=csv,noheader |
          awk -F ', *' '$2 != $3 { printf "%s%s (%s -> %s)", sep, $1, $2, $3; sep = ", " }')
if [ -n "$pending" ]; then
  gpus=$(printf '%s' "$pending" | sed 's/ ([^)]*)//g; s/ //g')
  say "GPU $pending: MIG mode change pending a GPU reset"
  say "  kubectl drain <node> --ignore-daemonsets; systemctl stop nvidia-persistenced nvidia-fabricmanager;"
  say "  nvidia-smi -r -i $gpus; start the services again; kubectl uncordon <node>"
  reboot_required "GPU $gpus must be reset (or the host rebooted) for the pending MIG mode"
fi
finish
