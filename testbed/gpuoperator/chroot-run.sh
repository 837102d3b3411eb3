#!/usr/bin/env bash
# Runs NVIDIA's GPU Operator controller on a private root, inside `unshare --mount` (operator.py):
# a tmpfs root holding what the operator image holds (docker/Dockerfile: assets/* and manifests/
# under /opt/gpu-operator, the binary in /usr/bin) and the node's /host-etc/os-release, with
# /proc and /dev bound in, and the pod's service account (token, ca.crt, namespace) where the
# kubelet mounts it. Mounts made here are private to this namespace and vanish with it: nothing
# is written outside ROOT.
# Usage: chroot-run.sh ROOT MODULE_DIR BINARY SERVICE_ACCOUNT_DIR OS_RELEASE -- ARGS...
set -euo pipefail
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
root=$1 module=$2 binary=$3 sa=$4 os_release=$5
shift 5
[[ ${1:-} == -- ]] && shift

mount -t tmpfs -o size=256m,mode=755 gpu-operator-root "$root"
mkdir -p "$root/opt/gpu-operator/manifests" "$root/host-etc" "$root/usr/bin" "$root/proc" "$root/dev" \
    "$root/tmp" "$root/etc" "$root/var/run/secrets/kubernetes.io/serviceaccount"
cp -r "$module/assets/." "$root/opt/gpu-operator/"
cp -r "$module/manifests/." "$root/opt/gpu-operator/manifests/"
cp "$module"/deployments/gpu-operator/crds/*.yaml "$root/opt/gpu-operator/"
cp "$binary" "$root/usr/bin/gpu-operator"
cp "$os_release" "$root/host-etc/os-release"
cp /etc/hosts /etc/nsswitch.conf "$root/etc/" 2>/dev/null || true
mount --rbind /proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --bind "$sa" "$root/var/run/secrets/kubernetes.io/serviceaccount"
exec chroot "$root" /usr/bin/gpu-operator "$@"
