"""The device side of the simulated GPU workers: what the NVIDIA device plugin and the CUDA
container would do on a real node, driven by the API server.

For each pod bound to a KWOK node it
* hands out concrete devices for the pod's ``nvidia.com/gpu`` / ``nvidia.com/mig-*`` limits
  (stable GPU-/MIG- UUIDs per node, never one device to two running pods) and records them in
  the annotation ``testbed.gpuconform.io/devices``;
* writes the container log (CRI format) that kwok serves through the API server: what
  ``nvidia-smi -L`` shows inside the container, then the vectoradd output (or, for a pod whose
  command ends in ``echo <text>``, that text);
* for a pod that runs to completion (restartPolicy Never/OnFailure) sets the annotation
  ``testbed.gpuconform.io/outcome`` (succeeded/failed), which the KWOK stages turn into the
  pod phase; a failing OnFailure pod is marked ``simulate=crashloop`` instead (it would restart).

The CUDA result is "fail" when the pod carries ``testbed.gpuconform.io/cuda: fail`` or the
scenario ConfigMap ``kube-system/gpuconform-testbed-scenario`` has ``cuda: fail``.

Run: ``python -m testbed.cluster.devicesim --kubeconfig K --log-dir D`` (the control plane does).
"""
from __future__ import annotations

import argparse
import datetime
import logging
import re
import sys
import threading
import uuid
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.cluster import informer
from testbed.cluster.hardware import GPUS
from testbed.cluster.hostexec import runs_in_host_root
from testbed.cluster.nodeagent import hardware, resource_name
from testbed.cluster.waiting import GiveUp, wait_for

RESOURCE_GPU, RESOURCE_MIG_PREFIX = "nvidia.com/gpu", "nvidia.com/mig-"
ANN = "testbed.gpuconform.io/"
ANN_DEVICES = ANN + "devices"
ANN_OUTCOME = ANN + "outcome"
ANN_SIMULATE = ANN + "simulate"
ANN_CUDA = ANN + "cuda"
SCENARIO_CONFIGMAP = ("kube-system", "gpuconform-testbed-scenario")
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
UUID_NAMESPACE = uuid.UUID("6a1f3a52-3c55-4a0b-9a53-7e1f0c5f6d1e")

VECTORADD_OK = [
    "[Vector addition of 50000 elements]",
    "Copy input data from the host memory to the CUDA device",
    "CUDA kernel launch with 196 blocks of 256 threads",
    "Copy output data from the CUDA device to the host memory",
    "Test PASSED",
    "Done",
]
VECTORADD_BUSY = [
    "[Vector addition of 50000 elements]",
    "Failed to allocate device vector A (error code CUDA-capable device(s) is/are busy or unavailable)!",
]

log = logging.getLogger("devicesim")


def device_uuid(prefix: str, *parts: object) -> str:
    return f"{prefix}-{uuid.uuid5(UUID_NAMESPACE, '/'.join(map(str, parts)))}"


class Device:
    """One allocatable device: a whole GPU or a MIG device on a GPU."""

    def __init__(self, resource: str, node: str, gpu_index: int, gpu_name: str,
                 mig_profile: str | None = None, mig_index: int | None = None):
        self.resource = resource
        self.gpu_name = gpu_name
        self.gpu_uuid = device_uuid("GPU", node, gpu_index)
        self.mig_profile = mig_profile
        self.uuid = device_uuid("MIG", node, gpu_index, mig_index) if mig_profile else self.gpu_uuid


def node_devices(node: client.V1Node) -> list[Device]:
    """Devices of a node, from its simulated GPUs (the MIG layout the node agent's MIG manager
    applied), limited to what the node's allocatable advertises (so a node whose allocatable
    disagrees hands out what it advertises). MIG devices of a GPU are listed largest first, as
    ``nvidia-smi -L`` lists them (formats.md 3.6)."""
    hw = hardware(node)
    if hw is None:
        return []
    name, gpu = node.metadata.name, GPUS[hw["product"]]
    devices: list[Device] = []
    for g, layout in enumerate(hw["layout"]):
        if layout is None:
            devices.append(Device(RESOURCE_GPU, name, g, gpu.smi_name))
            continue
        profiles = sorted((p for p, n in layout.items() for _ in range(n)),
                          key=lambda p: -gpu.profile(p).size)
        for i, profile in enumerate(profiles):
            devices.append(Device(resource_name(profile), name, g, gpu.smi_name, profile, i))
    allocatable = (node.status.allocatable or {}) if node.status else {}
    limited, seen = [], {}
    for d in devices:
        seen[d.resource] = seen.get(d.resource, 0) + 1
        if seen[d.resource] <= int(str(allocatable.get(d.resource, "0"))):
            limited.append(d)
    return limited


def _gpu_asked(container) -> dict[str, int]:
    res = container.resources
    asked = dict((res.limits or {}) if res else {})
    for k, v in ((res.requests or {}) if res else {}).items():
        asked.setdefault(k, v)
    return {k: int(str(v)) for k, v in asked.items() if k == RESOURCE_GPU or k.startswith(RESOURCE_MIG_PREFIX)}


def gpu_requests(pod: client.V1Pod) -> dict[str, int]:
    """GPU/MIG extended resources the pod asks for (limits; requests must equal them): the sum
    over its containers, or an init container's ask where larger (the pod's effective request,
    as the scheduler computes it -- kubernetes pkg/api/v1/resource/helpers.go PodRequests: the
    max of the init containers' and the sum of the containers'; the device plugin validator asks
    in its init container)."""
    total: dict[str, int] = {}
    for c in pod.spec.containers or []:
        for k, v in _gpu_asked(c).items():
            total[k] = total.get(k, 0) + v
    for c in pod.spec.init_containers or []:
        for k, v in _gpu_asked(c).items():
            total[k] = max(total.get(k, 0), v)
    return {k: v for k, v in total.items() if v > 0}


def smi_lines(devices: list[Device]) -> list[str]:
    """``nvidia-smi -L`` inside the container: the visible devices, renumbered from 0."""
    lines, gpus = [], {}
    for d in devices:
        gpus.setdefault(d.gpu_uuid, (d.gpu_name, []))[1].append(d)
    for idx, (gpu_uuid, (gpu_name, devs)) in enumerate(gpus.items()):
        lines.append(f"GPU {idx}: {gpu_name} (UUID: {gpu_uuid})")
        for j, d in enumerate(x for x in devs if x.mig_profile):
            lines.append(f"  MIG {d.mig_profile:<12}Device {j:>2}: (UUID: {d.uuid})")
    return lines


def echo_text(pod: client.V1Pod) -> str | None:
    c = (pod.spec.containers or [None])[0]
    words = list((c.command or []) + (c.args or [])) if c else []
    if words and words[-1].strip().startswith("echo "):
        return re.split(r";|&&|\|\|", words[-1].strip()[5:], maxsplit=1)[0].strip().strip("'\"")
    return None


def cri_log(lines: list[str]) -> str:
    ts = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return "".join(f"{ts} stdout F {line}\n" for line in lines)


class DeviceSim:
    def __init__(self, api: client.ApiClient, log_dir: Path):
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.in_use: dict[str, str] = {}        # device uuid -> pod uid
        self.by_pod: dict[str, list[str]] = {}  # pod uid -> device uuids
        self.handled: set[str] = set()          # pod uids already run (events may be stale)
        self.stop = threading.Event()

    # -- event handling -------------------------------------------------------------------------
    def handle(self, event_type: str, pod: client.V1Pod) -> None:
        uid = pod.metadata.uid
        ann = pod.metadata.annotations or {}
        terminal = (pod.status and pod.status.phase in ("Succeeded", "Failed")) or pod.metadata.deletion_timestamp
        if event_type == "DELETED" or terminal:
            self.release(uid)
            if event_type == "DELETED":
                self.handled.discard(uid)
                (self.log_dir / f"{pod.metadata.namespace}_{pod.metadata.name}_{uid}.log").unlink(missing_ok=True)
            return
        if ANN_DEVICES in ann or ANN_OUTCOME in ann:
            if uid not in self.handled:
                self.handled.add(uid)
                self.remember(uid, ann.get(ANN_DEVICES, ""))
            return
        if uid in self.handled:
            return
        if not pod.spec.node_name:
            return
        wanted = gpu_requests(pod)
        runs_to_completion = pod.spec.restart_policy in ("Never", "OnFailure")
        node = self.core.read_node(pod.spec.node_name)
        if (node.metadata.annotations or {}).get(KWOK_NODE_ANNOTATION) != "fake":
            return
        if runs_in_host_root(pod, node):
            return  # a pod with the node's / mounted, on a node backed by a host root: hostexec.py runs it
        if not wanted and not runs_to_completion:
            self.serve_plain_log(pod)  # a service pod (DaemonSet, Deployment): its log only
            return
        self.allocate_and_run(pod, node, wanted, runs_to_completion)

    def serve_plain_log(self, pod: client.V1Pod) -> None:
        uid, ns, name = pod.metadata.uid, pod.metadata.namespace, pod.metadata.name
        self.handled.add(uid)
        text = echo_text(pod)
        logfile = self.log_dir / f"{ns}_{name}_{uid}.log"
        logfile.write_text(cri_log([text] if text else []))
        self.put_logs_object(pod, logfile)

    def remember(self, pod_uid: str, devices: str) -> None:
        uuids = [u for u in devices.split(",") if u]
        self.by_pod[pod_uid] = uuids
        for u in uuids:
            self.in_use[u] = pod_uid

    def release(self, pod_uid: str) -> None:
        for u in self.by_pod.pop(pod_uid, []):
            self.in_use.pop(u, None)

    def cuda_fails(self, pod: client.V1Pod) -> bool:
        if (pod.metadata.annotations or {}).get(ANN_CUDA) == "fail":
            return True
        return self._scenario("cuda") == "fail"

    def _scenario(self, key: str) -> str | None:
        """A value of the bed's scenario ConfigMap (None when the ConfigMap or key is absent)."""
        try:
            cm = self.core.read_namespaced_config_map(SCENARIO_CONFIGMAP[1], SCENARIO_CONFIGMAP[0])
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return (cm.data or {}).get(key)

    def runtime_leaks_gpus(self) -> bool:
        """Scenario ConfigMap ``isolation: leak``: the container runtime shows every GPU of the
        node to a pod that asked for none (NVIDIA_VISIBLE_DEVICES=all with nvidia as default runtime)."""
        return self._scenario("isolation") == "leak"

    def allocate_and_run(self, pod: client.V1Pod, node: client.V1Node, wanted: dict[str, int],
                         runs_to_completion: bool) -> None:
        uid, ns, name = pod.metadata.uid, pod.metadata.namespace, pod.metadata.name
        self.handled.add(uid)
        given: list[Device] = []
        short = []
        for resource, n in sorted(wanted.items()):
            free = [d for d in node_devices(node) if d.resource == resource and d.uuid not in self.in_use]
            if len(free) < n:
                short.append(f"{resource}: want {n}, free {len(free)}")
            given.extend(free[:n])
        ok = not short and not (wanted and self.cuda_fails(pod))
        text = echo_text(pod)
        if wanted:
            lines = smi_lines(given) + (VECTORADD_OK if ok else VECTORADD_BUSY)
            lines += [text] if text and ok else []
        else:
            lines = [text] if text else []
            if self.runtime_leaks_gpus():
                seen = node_devices(node)
                gpus = list(dict.fromkeys(d.gpu_uuid for d in seen))
                lines = [f"/dev/nvidia{i}" for i in range(len(gpus))] + smi_lines(seen) + lines
        logfile = self.log_dir / f"{ns}_{name}_{uid}.log"
        logfile.write_text(cri_log(lines))
        self.put_logs_object(pod, logfile)
        self.remember(uid, ",".join(d.uuid for d in given))
        self.wait_log_served(pod)
        annotations = {ANN_DEVICES: ",".join(d.uuid for d in given)}
        if runs_to_completion:
            if ok or pod.spec.restart_policy == "Never":
                annotations[ANN_OUTCOME] = "succeeded" if ok else "failed"
            else:
                annotations[ANN_SIMULATE] = "crashloop"
        try:
            self.core.patch_namespaced_pod(name, ns, {"metadata": {"annotations": annotations}})
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.release(uid)
        log.info("pod %s/%s on %s: devices=%s outcome=%s %s", ns, name, node.metadata.name,
                 annotations[ANN_DEVICES], annotations.get(ANN_OUTCOME, annotations.get(ANN_SIMULATE)),
                 "; ".join(short))

    def wait_log_served(self, pod: client.V1Pod) -> None:
        """kwok learns about a Logs object through its informer; finish the pod only once its
        log is served through the API server, so a reader never sees "no logs found"."""
        container = pod.spec.containers[0].name

        def served() -> bool:
            try:
                self.core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace,
                                                  container=container, limit_bytes=1)
            except ApiException as exc:
                if exc.status == 404:
                    raise GiveUp("pod gone") from None
                raise
            return True

        try:
            wait_for(f"kwok to serve the log of {pod.metadata.namespace}/{pod.metadata.name}", served, 15)
        except (TimeoutError, GiveUp) as exc:
            log.warning("%s", exc)

    def put_logs_object(self, pod: client.V1Pod, logfile: Path) -> None:
        body = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
            "metadata": {
                "name": pod.metadata.name, "namespace": pod.metadata.namespace,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name,
                                     "uid": pod.metadata.uid}],
            },
            "spec": {"logs": [{"logsFile": str(logfile)}]},
        }
        args = ("kwok.x-k8s.io", "v1alpha1", pod.metadata.namespace, "logs")
        try:
            self.custom.create_namespaced_custom_object(*args, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            self.custom.delete_namespaced_custom_object(*args, pod.metadata.name)
            self.custom.create_namespaced_custom_object(*args, body)

    # -- list + watch loop ----------------------------------------------------------------------
    def remember_listed(self, pods: list) -> None:
        """First remember the devices running pods hold, then act: never hand out a used device."""
        for pod in pods:
            ann = pod.metadata.annotations or {}
            if ANN_DEVICES in ann and pod.status.phase not in ("Succeeded", "Failed"):
                self.remember(pod.metadata.uid, ann[ANN_DEVICES])

    def run(self) -> None:
        informer.run(self.core.list_pod_for_all_namespaces, self.handle, self.stop,
                     on_list=self.remember_listed, name="pods")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.cluster.devicesim", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--log-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from testbed.cluster.kube import client_for
    DeviceSim(client_for(args.kubeconfig), args.log_dir).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
