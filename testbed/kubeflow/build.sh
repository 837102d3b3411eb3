#!/usr/bin/env bash
# Build (or reuse) the Kubeflow test bed's login stack from the Go module proxy: dex
# (github.com/dexidp/dex/cmd/dex) and oauth2-proxy v7, each from its own tools module.
# Binaries go to ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/<versions-key>/ and are
# reused when both are there. Usage: build.sh [--print-dir]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"

export PATH="$PATH:/usr/local/go/bin"
export GOTOOLCHAIN=local
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0  # static binaries; dex alone needs cgo (below)

key="dex-${DEX_VERSION}_oauth2-proxy-${OAUTH2_PROXY_VERSION}"
cache="${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}"
bindir="$cache/bin/$key"
bins=(dex oauth2-proxy)

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
    echo "kubeflow-bins: reusing $bindir"
    exit 0
fi

command -v go >/dev/null || { echo "kubeflow-bins: go not found (looked in PATH and /usr/local/go/bin)" >&2; exit 1; }

mkdir -p "$bindir"
tmp="$(mktemp -d "$bindir/.build.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# One build at a time, nice'd: the machine also runs the control-plane test bed.
start=$SECONDS
echo "kubeflow-bins: building dex ${DEX_VERSION}"
# dex's cmd/dex refers to its SQLite storage, which exists only with cgo (storage/sql/sqlite.go)
(cd "$here/tools/dex" && CGO_ENABLED=1 nice go build -trimpath -ldflags "-s -w" -o "$tmp/dex" github.com/dexidp/dex/cmd/dex)
echo "kubeflow-bins: dex built in $((SECONDS - start))s"

start2=$SECONDS
echo "kubeflow-bins: building oauth2-proxy ${OAUTH2_PROXY_VERSION}"
(cd "$here/tools/oauth2-proxy" && nice go build -trimpath \
    -ldflags "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=${OAUTH2_PROXY_VERSION}" \
    -o "$tmp/oauth2-proxy" github.com/oauth2-proxy/oauth2-proxy/v7)
echo "kubeflow-bins: oauth2-proxy built in $((SECONDS - start2))s"

for b in "${bins[@]}"; do
    mv -f "$tmp/$b" "$bindir/$b"
done
echo "kubeflow-bins: built ${bins[*]} in $((SECONDS - start))s -> $bindir"
