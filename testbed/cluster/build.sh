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

export PATH="$PATH:/usr/local/go/bin"
export GOTOOLCHAIN=local
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0

key="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
cache="${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}"
bindir="$cache/bin/$key"
bins=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)

if [[ "${1:-}" == "--print-dir" ]]; then
    echo "$bindir"
    exit 0
fi

have_all() {
    local b
    for b in "${bins[@]}"; do
        [[ -x "$bindir/$b" ]] || return 1
    done
}

if have_all; then
    echo "cluster-bins: reusing $bindir"
    exit 0
fi

command -v go >/dev/null || { echo "cluster-bins: go not found (looked in PATH and /usr/local/go/bin)" >&2; exit 1; }

mkdir -p "$bindir"
tmp="$(mktemp -d "$bindir/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS

k8s_minor="${K8S_VERSION#v1.}"; k8s_minor="${k8s_minor%%.*}"
k8s_pkgs=(k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
          k8s.io/kubernetes/cmd/kube-scheduler)
k8s_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    k8s_ldflags+=" -X $pkg.gitVersion=${K8S_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=${k8s_minor}"
    k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

echo "cluster-bins: building kubernetes ${K8S_VERSION} (apiserver, controller-manager, scheduler)"
(cd "$here/tools/k8s" && nice go build -trimpath -ldflags "$k8s_ldflags" -o "$tmp/" "${k8s_pkgs[@]}")

echo "cluster-bins: building etcd ${ETCD_VERSION}"
etcd_ldflags="-s -w"
(cd "$here/tools/etcd" && nice go build -trimpath -ldflags "$etcd_ldflags" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)

echo "cluster-bins: building kwok ${KWOK_VERSION}"
kwok_ldflags="-s -w"
(cd "$here/tools/kwok" && nice go build -trimpath -ldflags "$kwok_ldflags" -o "$tmp/kwok" sigs.k8s.io/kwok/cmd/kwok)

for b in "${bins[@]}"; do
    mv -f "$tmp/$b" "$bindir/$b"
done
echo "cluster-bins: built ${bins[*]} in $((SECONDS - start))s -> $bindir"
