"""The probe pod of a ``k8s-node://`` host: one short-lived pod per node that runs the read-only
probe (:func:`gpuconform.node.probe.build_script`) against the node's own root: ``hostPID``, the
node's ``/`` mounted read-only at ``/host`` (recursively where the runtime can:
``recursiveReadOnly: IfPossible``), ``chroot /host /bin/sh -c <probe>`` as its command. Its
namespace is a companion of the run's, with Pod Security ``privileged``
(:mod:`gpuconform.node.k8s_node.pods` says why)."""
from __future__ import annotations

import dataclasses
import hashlib
import math

from gpuconform.node.collect import host_deadline_s

CONTAINER = "probe"
HOST_MOUNT = "/host"
COMPONENT = {"app.kubernetes.io/component": "node-probe"}
NODE_ANNOTATION = "gpuconform.io/node"
NAMESPACE_SUFFIX = "-node-probes"
POD_SECURITY_PRIVILEGED = {"pod-security.kubernetes.io/enforce": "privileged",
                           "pod-security.kubernetes.io/enforce-version": "latest"}


@dataclasses.dataclass(frozen=True)
class Settings:
    image: str
    image_pull_policy: str
    start_s: float        # creation until the container runs (scheduling, image pull)
    probe_s: float        # the probe itself, from the container's start
    api_s: float          # one API request
    parallel: int


def pod_name(node: str, attempt: int = 0) -> str:
    """``probe-<node>`` (``-<attempt>`` added for a probe after the first: the re-probe after
    ``--remediate=apply``), or a hashed one where that is longer than 63 characters (kept to
    the length of a DNS label, which a pod's host name must be)."""
    suffix = f"-{attempt}" if attempt else ""
    name = f"probe-{node}{suffix}"
    if len(name) <= 63:
        return name
    return f"probe-{hashlib.sha256(node.encode()).hexdigest()[:16]}-{node[:30].rstrip('.-')}{suffix}"


def pod_body(name: str, node: str, script: str, namespace: str, labels: dict, s: Settings) -> dict:
    """One probe pod: pinned to ``node`` through the scheduler (so an unschedulable node says
    why), tolerating every taint (GPU, cordoned, NotReady nodes are probed too), host PID and
    network (the node's processes; no pod network needed), the node's / read-only at /host."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {**labels, **COMPONENT},
                     "annotations": {NODE_ANNOTATION: node}},
        "spec": {
            "restartPolicy": "Never",
            "hostPID": True,
            "hostNetwork": True,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": 1,
            # the kubelet's own end of the pod, should this run die before deleting it
            "activeDeadlineSeconds": math.ceil(s.start_s + host_deadline_s(s.probe_s)),
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
            "tolerations": [{"operator": "Exists"}],
            "containers": [{
                "name": CONTAINER, "image": s.image, "imagePullPolicy": s.image_pull_policy,
                "command": ["chroot", HOST_MOUNT, "/bin/sh", "-c", script],
                "securityContext": {"privileged": True},
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                "volumeMounts": [{"name": "host-root", "mountPath": HOST_MOUNT, "readOnly": True,
                                  "recursiveReadOnly": "IfPossible"}],
            }],
            "volumes": [{"name": "host-root", "hostPath": {"path": "/", "type": "Directory"}}],
        },
    }
