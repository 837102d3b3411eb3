#!/usr/bin/env bash
# Build (or reuse) the Kubeflow test bed's login stack from the Go module proxy: dex
# (github.com/dexidp/dex/cmd/dex) and oauth2-proxy v7, each from its own tools module.
# Binaries go to ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/<versions-key>/ and are
# reused when both are there. Usage: build.sh [--print-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
GOBUILD_ARG=${1:-}
# shellcheck source=../gobuild.sh
source "$here/../gobuild.sh"

gobuild_begin kubeflow-bins "dex-${DEX_VERSION}_oauth2-proxy-${OAUTH2_PROXY_VERSION}" dex oauth2-proxy

# dex's cmd/dex refers to its SQLite storage, which exists only with cgo (storage/sql/sqlite.go)
CGO_ENABLED=1 gobuild_step "dex ${DEX_VERSION}" "$here/tools/dex" \
    -ldflags "-s -w" -o "$tmp/dex" github.com/dexidp/dex/cmd/dex
gobuild_step "oauth2-proxy ${OAUTH2_PROXY_VERSION}" "$here/tools/oauth2-proxy" \
    -ldflags "-s -w -X github.com/oauth2-proxy/oauth2-proxy/v7/pkg/version.VERSION=${OAUTH2_PROXY_VERSION}" \
    -o "$tmp/oauth2-proxy" github.com/oauth2-proxy/oauth2-proxy/v7
gobuild_end
