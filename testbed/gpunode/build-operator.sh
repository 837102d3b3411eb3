#!/usr/bin/env bash
# Build (or reuse) what the real GPU node needs besides build.sh's binaries to run NVIDIA's GPU
# Operator on it (testbed/gpunode/README.md, "The GPU Operator on the node"): the operands' own
# programs, for images written by images.py:
#   nvidia-validator (gpu-operator's validator/, the pinned GPU_OPERATOR_VERSION of the cluster bed),
#   nvidia-ctk-installer, nvidia-container-runtime-hook, nvidia-container-runtime.cdi and .legacy
#   (the toolkit image's programs, NVIDIA_CONTAINER_TOOLKIT_VERSION),
#   and stand-ins for libnvidia-container's C artifacts (placeholders/*.c: not served here).
# The controller itself is the cluster bed's (gpuoperator/build.sh).
# Output: ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/<versions-key>/. Usage: build-operator.sh [--print-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../gpuoperator/versions.env
source "$here/../gpuoperator/versions.env"
# shellcheck source=versions.env
source "$here/versions.env"
GOBUILD_ARG=${1:-}
# shellcheck source=../gobuild.sh
source "$here/../gobuild.sh"

gobuild_begin gpunode-operator-bins "gpunode-operator-${GPU_OPERATOR_VERSION}_ctk-${NVIDIA_CONTAINER_TOOLKIT_VERSION}" \
    nvidia-validator nvidia-ctk-installer nvidia-container-runtime-hook nvidia-container-runtime.cdi \
    nvidia-container-runtime.legacy nvidia-container-cli libnvidia-container.so.1 libnvidia-container-go.so.1

# validator/Makefile: -s -w and the version variable of internal/info; cgo and the NVIDIA
# extldflags as for the other NVML users (go-nvml is loaded at run time)
CGO_ENABLED=1 gobuild_step "nvidia-validator ${GPU_OPERATOR_VERSION}" "$here/tools/validator" \
    -ldflags "-s -w '-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files' -X github.com/NVIDIA/gpu-operator/internal/info.version=${GPU_OPERATOR_VERSION}" \
    -o "$tmp/nvidia-validator" github.com/NVIDIA/gpu-operator/validator
CGO_ENABLED=1 gobuild_step "NVIDIA container toolkit ${NVIDIA_CONTAINER_TOOLKIT_VERSION} (installer, hook, runtime modes)" "$here/tools/toolkit" \
    -ldflags "-s -w '-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files -Wl,-z,lazy' -X github.com/NVIDIA/nvidia-container-toolkit/internal/info.version=${NVIDIA_CONTAINER_TOOLKIT_VERSION#v}" \
    -o "$tmp/" github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk-installer \
    github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime-hook \
    github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime.cdi \
    github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime.legacy

t0=$SECONDS
gcc -Os -static -s -o "$tmp/nvidia-container-cli" "$here/placeholders/nvidia-container-cli.c"
gcc -Os -shared -fPIC -s -Wl,-soname,libnvidia-container.so.1 -o "$tmp/libnvidia-container.so.1" "$here/placeholders/libnvidia-container.c"
gcc -Os -shared -fPIC -s -Wl,-soname,libnvidia-container-go.so.1 -o "$tmp/libnvidia-container-go.so.1" "$here/placeholders/libnvidia-container.c"
echo "$label: placeholders built in $((SECONDS - t0))s"
gobuild_end
