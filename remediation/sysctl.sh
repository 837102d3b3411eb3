#!/bin/sh
# Sets kernel parameters now and persistently in /etc/sysctl.d/99-gpuconform.conf
# (net.core.bpf_jit_harden=2 makes the GPU Operator validator's eBPF program fail with
# 'last insn is not an exit or jmp').
# Fixes: node.sysctl[<key>]
# Usage: [SYSCTLS="net.core.bpf_jit_harden=1 ..."] sysctl.sh [--apply]
. "$(dirname "$0")/lib.sh"
for kv in ${SYSCTLS:-net.core.bpf_jit_harden=1}; do
  key=${kv%%=*} value=${kv#*=}
  ensure_line /etc/sysctl.d/99-gpuconform.conf "$key = $value"
  file=/proc/sys/$(printf '%s' "$key" | tr . /)
  cur=$(cat "$ROOT$file" 2>/dev/null || echo "?")
  [ "$cur" = "$value" ] && continue
  if has sysctl; then run sysctl -w "$key=$value"
  else
    plan "write $value to $file"; CHANGED=1
    [ "$APPLY" = 1 ] && printf '%s\n' "$value" >"$ROOT$file"
  fi
done
finish
