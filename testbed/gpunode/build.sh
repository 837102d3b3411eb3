#!/usr/bin/env bash
# Build (or reuse) the real GPU node's binaries (testbed/gpunode/README.md), each from its own tools
# module under tools/ so that their dependency graphs stay apart:
#   kube (kube-apiserver, kube-controller-manager, kube-scheduler and kubelet in one binary),
#   containerd, ctr, containerd-shim-runc-v2, runc, the bridge/host-local/loopback CNI plugins,
#   nvidia-ctk, nvidia-cdi-hook, nvidia-container-runtime, nvidia-device-plugin,
#   gpu-feature-discovery, nfd-master, nfd-worker; and beside them pause (pause.c), Debian's
#   static busybox and NFD's CRDs (nfd-crds.yaml). etcd is the cluster bed's (cluster/build.sh).
# Output: ${GPUCONFORM_CACHE:-$HOME/.cache/gpuconform}/bin/<versions-key>/. Usage: build.sh [--print-dir]
# Needs go, gcc and libc6-dev (static libc for runc and pause), and apt-get/dpkg to fetch two
# Debian packages without installing them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=../cluster/versions.env
source "$here/../cluster/versions.env"
# shellcheck source=../deviceplugin/versions.env
source "$here/../deviceplugin/versions.env"
# shellcheck source=versions.env
source "$here/versions.env"
GOBUILD_ARG=${1:-}
# shellcheck source=../gobuild.sh
source "$here/../gobuild.sh"

gobuild_begin gpunode-bins "gpunode-k8s-${K8S_VERSION}_containerd-${CONTAINERD_VERSION}_runc-${RUNC_VERSION}_cni-${CNI_PLUGINS_VERSION}_ctk-${NVIDIA_CONTAINER_TOOLKIT_VERSION}_dp-${K8S_DEVICE_PLUGIN_VERSION}_nfd-${NFD_VERSION}" \
    kube containerd ctr containerd-shim-runc-v2 runc bridge host-local loopback \
    nvidia-ctk nvidia-cdi-hook nvidia-container-runtime nvidia-device-plugin gpu-feature-discovery \
    nfd-master nfd-worker pause busybox nfd-crds.yaml

# Unpacks Debian's package $1 into folder $2: downloaded with apt-get, never installed.
debian_package() {
    local dl="$tmp/debs"
    mkdir -p "$dl" "$2"
    if ! (cd "$dl" && apt-get download -qq "$1" 2>/dev/null); then
        apt-get update -qq   # a clean machine has no package lists yet
        (cd "$dl" && apt-get download -qq "$1")
    fi
    dpkg -x "$dl/$1"_*.deb "$2"
}

t0=$SECONDS
echo "$label: fetching Debian's busybox-static and libseccomp-dev"
debian_package busybox-static "$tmp/busybox-static"
mv "$tmp/busybox-static/bin/busybox" "$tmp/busybox"
seccomp="$tmp/libseccomp"
debian_package libseccomp-dev "$seccomp"
echo "$label: Debian packages fetched in $((SECONDS - t0))s"

# The sandbox image's program: our own, static, so that the image needs nothing else
t0=$SECONDS
gcc -Os -static -s -o "$tmp/pause" "$here/pause.c"
echo "$label: pause built in $((SECONDS - t0))s"

gobuild_step "kubernetes ${K8S_VERSION} (kube: apiserver, controller-manager, scheduler, kubelet)" \
    "$here/tools/kube" -ldflags "-s -w $(k8s_version_ldflags "$K8S_VERSION")" -o "$tmp/kube" .

# Tags and -X flags of containerd's Makefile (GO_BUILDTAGS, GO_LDFLAGS); without cgo, as its static
# release is; no_btrfs, no_devmapper and no_zfs leave out snapshotters the node does not use
# (cmd/containerd/builtins/*_linux.go).
ctd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION}"
gobuild_step "containerd ${CONTAINERD_VERSION} (containerd, ctr)" "$here/tools/containerd" \
    -tags "urfave_cli_no_docs no_btrfs no_devmapper no_zfs" -ldflags "$ctd_ldflags" -o "$tmp/" \
    github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/ctr
# the shim as the Makefile builds it: SHIM_CGO_ENABLED=0, SHIM_GO_BUILDTAGS adds no_grpc
gobuild_step "containerd-shim-runc-v2 ${CONTAINERD_VERSION}" "$here/tools/containerd" \
    -tags "urfave_cli_no_docs no_grpc" -ldflags "$ctd_ldflags" -o "$tmp/containerd-shim-runc-v2" \
    github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2

# runc as its Makefile's `static` target builds it (BUILDTAGS + netgo osusergo, -extldflags -static;
# non-PIE): cgo for libcontainer/nsenter, libseccomp linked in from the -dev package's
# libseccomp.a. libseccomp-golang asks pkg-config for it ("#cgo pkg-config: libseccomp"): a
# stand-in answers from the unpacked package, so neither pkg-config nor libseccomp-dev need be
# installed. The version comes from runc's embedded VERSION file.
multiarch=$(gcc -print-multiarch)
cat > "$seccomp/pkg-config" <<EOF
#!/bin/sh
case "\$*" in
*--cflags*) echo "-I$seccomp/usr/include" ;;
*--libs*) echo "-L$seccomp/usr/lib/$multiarch -lseccomp" ;;
esac
EOF
chmod +x "$seccomp/pkg-config"
PKG_CONFIG="$seccomp/pkg-config" CGO_ENABLED=1 gobuild_step "runc ${RUNC_VERSION}" "$here/tools/runc" \
    -tags "seccomp urfave_cli_no_docs netgo osusergo" -ldflags "-s -w -extldflags -static" \
    -o "$tmp/runc" github.com/opencontainers/runc

# CGO_ENABLED=0 and the version flag of the plugins' release workflow (.github/workflows/release.yaml)
gobuild_step "CNI plugins ${CNI_PLUGINS_VERSION} (bridge, host-local, loopback)" "$here/tools/cni" \
    -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=${CNI_PLUGINS_VERSION}" \
    -o "$tmp/" github.com/containernetworking/plugins/plugins/main/bridge \
    github.com/containernetworking/plugins/plugins/ipam/host-local github.com/containernetworking/plugins/plugins/main/loopback

# NVIDIA's programs load libnvidia-ml at run time (go-nvml's dlopen): cgo, and the extldflags of
# their Makefiles (EXTLDFLAGS) that leave its symbols unresolved at link time. Versions as the
# Makefiles set them (CLI_VERSION: the toolkit's without its "v").
CGO_ENABLED=1 gobuild_step "NVIDIA container toolkit ${NVIDIA_CONTAINER_TOOLKIT_VERSION}" "$here/tools/toolkit" \
    -ldflags "-s -w '-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files -Wl,-z,lazy' -X github.com/NVIDIA/nvidia-container-toolkit/internal/info.version=${NVIDIA_CONTAINER_TOOLKIT_VERSION#v}" \
    -o "$tmp/" github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-ctk \
    github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-cdi-hook \
    github.com/NVIDIA/nvidia-container-toolkit/cmd/nvidia-container-runtime
CGO_ENABLED=1 gobuild_step "NVIDIA device plugin ${K8S_DEVICE_PLUGIN_VERSION} (with GFD)" "$here/tools/device-plugin" \
    -ldflags "-s -w '-extldflags=-Wl,--export-dynamic -Wl,--unresolved-symbols=ignore-in-object-files' -X github.com/NVIDIA/k8s-device-plugin/internal/info.version=${K8S_DEVICE_PLUGIN_VERSION}" \
    -o "$tmp/" github.com/NVIDIA/k8s-device-plugin/cmd/nvidia-device-plugin \
    github.com/NVIDIA/k8s-device-plugin/cmd/gpu-feature-discovery

# NFD's Makefile (BUILD_FLAGS): osusergo,netgo and its version; the host path prefix stays "/"
# (pkg/utils/hostpath), as nfd-master and nfd-worker run on the host, not in a container.
gobuild_step "Node Feature Discovery ${NFD_VERSION} (nfd-master, nfd-worker)" "$here/tools/nfd" \
    -tags "osusergo netgo" -ldflags "-s -w -X sigs.k8s.io/node-feature-discovery/pkg/version.version=${NFD_VERSION}" \
    -o "$tmp/" sigs.k8s.io/node-feature-discovery/cmd/nfd-master sigs.k8s.io/node-feature-discovery/cmd/nfd-worker
# NFD's CRDs (NodeFeature, NodeFeatureRule, NodeFeatureGroup) from the module, for stage.py
nfd_dir=$(cd "$here/tools/nfd" && go list -m -f '{{.Dir}}' sigs.k8s.io/node-feature-discovery)
cp "$nfd_dir/deployment/base/nfd-crds/nfd-api-crds.yaml" "$tmp/nfd-crds.yaml"
chmod u+w "$tmp/nfd-crds.yaml"
gobuild_end
