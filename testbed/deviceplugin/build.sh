#!/usr/bin/env bash
# Fetch (or reuse) NVIDIA's k8s-device-plugin module from the Go module proxy and keep its Helm
# chart (deployments/helm/nvidia-device-plugin: the device plugin and GPU Feature Discovery
# DaemonSets) in the shared cache. Nothing is built; nothing of the module is committed.
# Output: ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/<versions-key>/. Usage: build.sh [--print-dir]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
GOBUILD_ARG=${1:-}
# shellcheck source=../gobuild.sh
source "$here/../gobuild.sh"

gobuild_begin device-plugin-chart "k8s-device-plugin-${K8S_DEVICE_PLUGIN_VERSION}" device-plugin-module
moddir=$(cd "$here/tools/k8s-device-plugin" && go mod download github.com/NVIDIA/k8s-device-plugin &&
         go list -m -f '{{.Dir}}' github.com/NVIDIA/k8s-device-plugin)
mkdir -p "$tmp/device-plugin-module/deployments"
cp -r "$moddir/deployments/helm" "$moddir/deployments/static" "$tmp/device-plugin-module/deployments/"
chmod -R u+w "$tmp/device-plugin-module"
gobuild_end
