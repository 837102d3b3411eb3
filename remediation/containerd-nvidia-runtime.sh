#!/usr/bin/env bash
# Configures containerd's `nvidia` runtime as the default, as the article does, and restarts
# containerd. nvidia-ctk backs up nothing itself, so the config is copied first.
# Fixes: node.containerd.nvidia_runtime, node.containerd.nvidia_default
# Usage: containerd-nvidia-runtime.sh [--apply]
. "$(dirname "$0")/lib.sh"
if command -v containerd >/dev/null 2>&1 && containerd config dump 2>/dev/null |
   grep -q 'default_runtime_name = "nvidia"' &&
   containerd config dump 2>/dev/null | grep -q 'BinaryName = "/usr/bin/nvidia-container-runtime"'; then
  :
else
  [ "$APPLY" = 1 ] && backup /etc/containerd/config.toml
  run nvidia-ctk runtime configure --runtime=containerd --set-as-default
  run systemctl restart containerd
fi
finish
