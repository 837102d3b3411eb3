#!/usr/bin/env bash
# Runs one of the bed's Kubeflow controllers (trainer.py) inside `unshare --mount`, seeing the two
# paths of its pod that it reads by fixed name:
# * /tmp/k8s-webhook-server: TMP/k8s-webhook-server of the bed's state, bound there. Kubeflow
#   Trainer and JobSet both read their webhook serving certificate from
#   /tmp/k8s-webhook-server/serving-certs (trainer pkg/util/cert/cert.go and jobset
#   pkg/util/cert/cert.go, certDir), where the kubelet mounts their webhook Secret; trainer.py
#   writes it there as the kubelet would. So two controllers or two beds never share that path.
#   Only that folder is bound, not all of /tmp: a checkout under /tmp (CI's fresh clone) keeps its
#   state, the controller's kubeconfig and config file, visible. The empty mount point is made in
#   the host's /tmp once;
# * /var/run/secrets/kubernetes.io/serviceaccount: the folder SA (its namespace file), only where
#   that path exists on this host (a bed run inside a pod): both take their own namespace from it
#   (GetOperatorNamespace / getOperatorNamespace) and fall back to their install namespace.
# Usage: pod-view-run.sh TMP SA -- BINARY ARGS...
set -euo pipefail
tmp=$1 sa=$2
shift 2
[[ ${1:-} == -- ]] && shift
mkdir -p /tmp/k8s-webhook-server
mount --bind "$tmp/k8s-webhook-server" /tmp/k8s-webhook-server
if [[ -d /var/run/secrets/kubernetes.io/serviceaccount ]]; then
    mount --bind "$sa" /var/run/secrets/kubernetes.io/serviceaccount
fi
exec "$@"
