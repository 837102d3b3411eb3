"""The devices of the simulated GPU workers and what a container sees of them: the allocatable
devices of a node (whole GPUs, MIG devices), a pod's GPU requests, ``nvidia-smi -L`` inside the
container, the CUDA vectoradd output, the CRI log line format. Used by the device simulator
(:mod:`testbed.cluster.devicesim`)."""
from __future__ import annotations

import json
import re
import uuid

from kubernetes import client

from testbed.cluster.hardware import GPUS
from testbed.cluster.nodeagent import ANN_PLUGIN, hardware, resource_name, single_profile

RESOURCE_GPU, RESOURCE_MIG_PREFIX = "nvidia.com/gpu", "nvidia.com/mig-"
ANN = "testbed.gpuconform.io/"
ANN_DEVICES = ANN + "devices"
ANN_OUTCOME = ANN + "outcome"
ANN_SIMULATE = ANN + "simulate"
ANN_CUDA = ANN + "cuda"
#: version of the driver's user-space libraries on the node's host, where they differ from the
#: loaded kernel module (a driver upgraded without reboot): NVML then refuses in every container
ANN_DRIVER_LIBRARIES = ANN + "driver-libraries"
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

def device_uuid(prefix: str, *parts: object) -> str:
    return f"{prefix}-{uuid.uuid5(UUID_NAMESPACE, '/'.join(map(str, parts)))}"


class Device:
    """One allocatable device: a whole GPU or a MIG device on a GPU."""

    def __init__(self, resource: str, node: str, gpu_index: int, gpu_name: str,
                 mig_profile: str | None = None, mig_index: int | None = None, replica: int | None = None):
        self.resource = resource
        self.gpu_name = gpu_name
        self.gpu_index = gpu_index  #: the GPU's minor number on its node: /dev/nvidia<gpu_index>
        self.gpu_uuid = device_uuid("GPU", node, gpu_index)
        self.mig_profile = mig_profile
        self.uuid = device_uuid("MIG", node, gpu_index, mig_index) if mig_profile else self.gpu_uuid
        #: the device id the kubelet allocates: a replica of a shared device is ``<uuid>::<i>``
        #: (k8s-device-plugin internal/rm: replicated device ids)
        self.id = self.uuid if replica is None else f"{self.uuid}::{replica}"


def node_devices(node: client.V1Node) -> list[Device]:
    """Devices of a node, from its simulated GPUs (the MIG layout the node agent's MIG manager
    applied), named and replicated as its device plugin registered them (MIG strategy, sharing),
    limited to what the node's allocatable advertises (so a node whose allocatable disagrees
    hands out what it advertises). MIG devices of a GPU are listed largest first, as
    ``nvidia-smi -L`` lists them (formats.md 3.6)."""
    hw = hardware(node)
    if hw is None:
        return []
    name, gpu = node.metadata.name, GPUS[hw["product"]]
    plugin = json.loads((node.metadata.annotations or {}).get(ANN_PLUGIN) or '{"strategy": "mixed"}')
    strategy, replication = plugin["strategy"], plugin.get("replication") or {}
    if strategy == "single" and single_profile(hw) is None:
        return []
    physical: list[Device] = []
    for g, layout in enumerate(hw["layout"]):
        if layout is None or strategy == "none":
            physical.append(Device(RESOURCE_GPU, name, g, gpu.smi_name))
            continue
        profiles = sorted((p for p, n in layout.items() for _ in range(n)),
                          key=lambda p: -gpu.profile(p).size)
        for i, profile in enumerate(profiles):
            resource = RESOURCE_GPU if strategy == "single" else resource_name(profile)
            physical.append(Device(resource, name, g, gpu.smi_name, profile, i))
    devices: list[Device] = []
    for d in physical:
        r = replication.get(d.resource)
        if not r or r["replicas"] <= 1:
            devices.append(d)
            continue
        for k in range(r["replicas"]):
            copy = Device(r.get("rename") or d.resource, name, 0, d.gpu_name, replica=k)
            copy.gpu_uuid, copy.mig_profile, copy.uuid, copy.gpu_index = d.gpu_uuid, d.mig_profile, d.uuid, d.gpu_index
            copy.id = f"{d.uuid}::{k}"
            devices.append(copy)
    allocatable = (node.status.allocatable or {}) if node.status else {}
    limited, seen = [], {}
    for d in devices:
        seen[d.resource] = seen.get(d.resource, 0) + 1
        if seen[d.resource] <= int(str(allocatable.get(d.resource, "0"))):
            limited.append(d)
    return limited


def gpu_asked(container) -> dict[str, int]:
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
        for k, v in gpu_asked(c).items():
            total[k] = total.get(k, 0) + v
    for c in pod.spec.init_containers or []:
        for k, v in gpu_asked(c).items():
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


def command_text(container) -> str:
    return " ".join(list(container.command or []) + list(container.args or []))


def device_node_lines(devices: list[Device]) -> list[str]:
    """``ls -1 /dev/nvidia[0-9]*`` inside the container: one node per visible GPU (its minor)."""
    return [f"/dev/nvidia{i}" for i in sorted(dict.fromkeys(d.gpu_index for d in devices))]


def driver_report(hw: dict, devices: list[Device], libraries: str | None) -> tuple[list[str], bool]:
    """What the injected ``nvidia-smi --query-gpu=driver_version --format=csv,noheader`` and the
    header of ``nvidia-smi`` print, and whether they succeed: the driver's libraries (injected from
    the host) of another version than the loaded kernel module make NVML refuse
    ("Driver/library version mismatch", as after a driver upgrade without reboot: nvidia-smi's
    own two lines, the second naming the libraries' major.minor, as field reports quote them, e.g.
    "Failed to initialize NVML: Driver/library version mismatch" / "NVML library version: 580.126")."""
    if libraries and libraries != hw["driver"]:
        return ["Failed to initialize NVML: Driver/library version mismatch",
                "NVML library version: " + ".".join(libraries.split(".")[:2])], False
    gpus = len(dict.fromkeys(d.gpu_uuid for d in devices))
    return [hw["driver"]] * gpus + [
        f"| NVIDIA-SMI {hw['driver']}             Driver Version: {hw['driver']}     CUDA Version: {hw['cuda']}     |"], True


def echo_text(pod: client.V1Pod) -> str | None:
    c = (pod.spec.containers or [None])[0]
    words = list((c.command or []) + (c.args or [])) if c else []
    if words and words[-1].strip().startswith("echo "):
        return re.split(r";|&&|\|\|", words[-1].strip()[5:], maxsplit=1)[0].strip().strip("'\"")
    return None
