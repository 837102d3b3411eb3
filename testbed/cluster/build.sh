#!/usr/bin/env bash
# Build (or reuse) the test bed's control-plane binaries from the Go module proxy:
#   kube-apiserver, kube-controller-manager, kube-scheduler (k8s.io/kubernetes),
#   etcd (go.etcd.io/etcd/server/v3) and kwok (sigs.k8s.io/kwok/cmd/kwok).
# Binaries go to ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/<versions-key>/ and are
# reused when all of them are there. Usage: build.sh [--print-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
GOBUILD_ARG=${1:-}
# shellcheck source=../gobuild.sh
source "$here/../gobuild.sh"

gobuild_begin cluster-bins "k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}" \
    kube-apiserver kube-controller-manager kube-scheduler etcd kwok

gobuild_step "kubernetes ${K8S_VERSION} (apiserver, controller-manager, scheduler)" "$here/tools/k8s" \
    -ldflags "-s -w $(k8s_version_ldflags "$K8S_VERSION")" -o "$tmp/" k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler
gobuild_step "etcd ${ETCD_VERSION}" "$here/tools/etcd" -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
gobuild_step "kwok ${KWOK_VERSION}" "$here/tools/kwok" -ldflags "-s -w" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok
gobuild_end
