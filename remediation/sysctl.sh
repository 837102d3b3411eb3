#!/usr/bin/env bash
# Sets net.core.bpf_jit_harden=1 now and persistently (the GPU Operator validator's eBPF
# program is rejected with 'last insn is not an exit or jmp' when it is 2).
# Fixes: node.sysctl[net.core.bpf_jit_harden]
# Usage: sysctl.sh [--apply]
. "$(dirname "$0")/lib.sh"
KEY=net.core.bpf_jit_harden VALUE=${BPF_JIT_HARDEN:-1}
ensure_line /etc/sysctl.d/99-gpuconform.conf "$KEY = $VALUE"
cur=$(cat "$ROOT/proc/sys/net/core/bpf_jit_harden" 2>/dev/null || echo "?")
if [ "$cur" != "$VALUE" ]; then
  if [ -n "$ROOT" ]; then
    plan "write $VALUE to /proc/sys/net/core/bpf_jit_harden"
    [ "$APPLY" = 1 ] && echo "$VALUE" >"$ROOT/proc/sys/net/core/bpf_jit_harden"
    CHANGED=1
  else
    run sysctl -w "$KEY=$VALUE"
  fi
fi
finish
