#!/usr/bin/env bash
# Build (or reuse) NVIDIA's GPU Operator controller (github.com/NVIDIA/gpu-operator/cmd/gpu-operator)
# and Helm (helm.sh/helm/v3/cmd/helm) from the Go module proxy, and keep beside them the files of
# the operator's module that the bed needs at run time: its Helm chart (deployments/gpu-operator,
# CRDs included) and the operand assets the controller reads from /opt/gpu-operator (assets/,
# manifests/). Nothing of the module is committed to this repository: it is taken from the
# module cache on each cold build.
# Output: ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/<versions-key>/. Usage: build.sh [--print-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
GOBUILD_ARG=${1:-}
# shellcheck source=../gobuild.sh
source "$here/../gobuild.sh"

gobuild_begin gpu-operator-bins "gpu-operator-${GPU_OPERATOR_VERSION}_helm-${HELM_VERSION}" \
    gpu-operator helm gpu-operator-module

gobuild_step "gpu-operator ${GPU_OPERATOR_VERSION}" "$here/tools/gpu-operator" \
    -ldflags "-s -w -X github.com/NVIDIA/gpu-operator/internal/info.version=${GPU_OPERATOR_VERSION}" \
    -o "$tmp/gpu-operator" github.com/NVIDIA/gpu-operator/cmd/gpu-operator
gobuild_step "helm ${HELM_VERSION}" "$here/tools/helm" \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=${HELM_VERSION}" \
    -o "$tmp/helm" helm.sh/helm/v3/cmd/helm

# The module's files the bed uses, copied from the read-only module cache in the module's own
# layout: assets/ and manifests/ (what the operator image holds under /opt/gpu-operator),
# deployments/gpu-operator (the Helm chart, its CRDs and the NFD subchart), validator/ (the
# workload pod manifests nvidia-validator creates).
moddir=$(cd "$here/tools/gpu-operator" && go list -m -f '{{.Dir}}' github.com/NVIDIA/gpu-operator)
mkdir -p "$tmp/gpu-operator-module/validator"
cp -r "$moddir/assets" "$moddir/manifests" "$moddir/deployments" "$tmp/gpu-operator-module/"
cp "$moddir"/validator/*.yaml "$tmp/gpu-operator-module/validator/"
chmod -R u+w "$tmp/gpu-operator-module"
gobuild_end
