#!/usr/bin/env bash
# Build (or reuse) kubectl from k8s.io/kubernetes at the bed's K8S_VERSION (versions.env), through
# the same tools module as the control plane (tools/k8s), for the selftests that apply
# manifests as a user does (kubectl apply -k: kustomize is built into kubectl). Apart from
# build.sh so that the bed's control plane does not wait for it, nor it for the control plane.
# The binary goes to ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/kubectl-<K8S_VERSION>/.
# Usage: build-kubectl.sh [--print-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
GOBUILD_ARG=${1:-}
# shellcheck source=../gobuild.sh
source "$here/../gobuild.sh"

gobuild_begin kubectl "kubectl-${K8S_VERSION}" kubectl
gobuild_step "kubectl ${K8S_VERSION}" "$here/tools/k8s" \
    -ldflags "-s -w $(k8s_version_ldflags "$K8S_VERSION")" -o "$tmp/kubectl" k8s.io/kubernetes/cmd/kubectl
gobuild_end
