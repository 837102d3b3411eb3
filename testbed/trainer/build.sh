#!/usr/bin/env bash
# Build (or reuse) Kubeflow Trainer v2's controller manager
# (github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager) and the JobSet controller
# (sigs.k8s.io/jobset, its main package is the module root) from the Go module proxy, each from
# its own tools module (each with its module's own dependency versions), and keep beside them the
# install manifests of both modules: the Trainer's manifests/ (CRDs, webhook configurations,
# RBAC, ClusterTrainingRuntimes) and JobSet's config/ (the kustomization its release manifests
# are built from: CRDs, webhooks, RBAC). Nothing of either module is committed here: it is taken from the module cache on each cold build.
# Output: ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/<versions-key>/. Usage: build.sh [--print-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
GOBUILD_ARG=${1:-}
# shellcheck source=../gobuild.sh
source "$here/../gobuild.sh"

gobuild_begin trainer-bins "trainer-${TRAINER_VERSION}_jobset-${JOBSET_VERSION}" \
    trainer-controller-manager jobset-controller trainer-manifests jobset-manifests

gobuild_step "trainer-controller-manager ${TRAINER_VERSION}" "$here/tools/trainer" \
    -ldflags "-s -w" -o "$tmp/trainer-controller-manager" github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager
# JobSet's Makefile stamps pkg/version (GitVersion, GitCommit) the same way
gobuild_step "jobset ${JOBSET_VERSION}" "$here/tools/jobset" \
    -ldflags "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion=${JOBSET_VERSION}" \
    -o "$tmp/jobset-controller" sigs.k8s.io/jobset

trainer_dir=$(cd "$here/tools/trainer" && go list -m -f '{{.Dir}}' github.com/kubeflow/trainer/v2)
jobset_dir=$(cd "$here/tools/jobset" && go list -m -f '{{.Dir}}' sigs.k8s.io/jobset)
cp -r "$trainer_dir/manifests" "$tmp/trainer-manifests"
cp -r "$jobset_dir/config" "$tmp/jobset-manifests"
chmod -R u+w "$tmp/trainer-manifests" "$tmp/jobset-manifests"
gobuild_end
