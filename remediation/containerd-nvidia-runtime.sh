#!/bin/sh
# Configures containerd's `nvidia` runtime as the default, as the article does
# (nvidia-ctk runtime configure --runtime=containerd --set-as-default), and restarts containerd.
# nvidia-ctk backs up nothing itself, so the config is copied first.
# Fixes: node.containerd.nvidia_runtime, node.containerd.nvidia_default
# Usage: [RUNTIME_BINARY=/usr/bin/nvidia-container-runtime] containerd-nvidia-runtime.sh [--apply]
. "$(dirname "$0")/lib.sh"
C=/etc/containerd/config.toml
B=${RUNTIME_BINARY:-/usr/bin/nvidia-container-runtime}
has containerd || fail "containerd is not installed on the target"
dump=$(in_root containerd config dump 2>/dev/null) || fail "containerd config dump failed on the target"
# config v2 writes double quotes, v3 (containerd 2.x) single quotes
if printf '%s\n' "$dump" | grep -Eq "default_runtime_name = [\"']nvidia[\"']" &&
   printf '%s\n' "$dump" | grep -Eq "BinaryName = [\"']$B[\"']"; then
  finish; exit 0
fi
has nvidia-ctk || fail "nvidia-ctk is not installed on the target (install nvidia-container-toolkit)"
[ "$APPLY" = 1 ] && backup "$C"
run nvidia-ctk runtime configure --runtime=containerd --set-as-default --config="$C"
run systemctl restart containerd
finish
