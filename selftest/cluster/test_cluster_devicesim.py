"""The device simulator's pure parts: which devices a node has, what a pod asks, what it logs."""
from __future__ import annotations

import re

from kubernetes import client

from testbed.cluster.devicesim import echo_text, gpu_requests, node_devices, smi_lines
from testbed.cluster.platform import GpuWorker, gpu_worker_node

MIG_LINE = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[0-9a-f-]+)\)$")


def _node(worker: GpuWorker, allocatable_override: dict | None = None) -> client.V1Node:
    body = gpu_worker_node(worker)
    alloc = {**body["status"]["allocatable"], **(allocatable_override or {})}
    return client.V1Node(metadata=client.V1ObjectMeta(name=worker.name, labels=body["metadata"]["labels"]),
                         status=client.V1NodeStatus(allocatable=alloc))


def _pod(limits: dict, command=None, args=None) -> client.V1Pod:
    return client.V1Pod(spec=client.V1PodSpec(containers=[client.V1Container(
        name="c", command=command, args=args, resources=client.V1ResourceRequirements(limits=limits))]))


def test_balanced_node_has_the_catalog_devices_with_unique_uuids():
    devices = node_devices(_node(GpuWorker("w", "all-balanced")))
    counts = {}
    for d in devices:
        counts[d.resource] = counts.get(d.resource, 0) + 1
    assert counts == {"nvidia.com/mig-3g.40gb": 8, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-1g.10gb": 16}
    assert len({d.uuid for d in devices}) == len(devices)


def test_devices_are_limited_to_what_allocatable_advertises():
    devices = node_devices(_node(GpuWorker("w", "all-1g.10gb"), {"nvidia.com/mig-1g.10gb": "49"}))
    assert len(devices) == 49


def test_uuids_are_stable_per_node():
    a = [d.uuid for d in node_devices(_node(GpuWorker("w", "all-disabled")))]
    b = [d.uuid for d in node_devices(_node(GpuWorker("w", "all-disabled")))]
    c = [d.uuid for d in node_devices(_node(GpuWorker("other", "all-disabled")))]
    assert a == b and not set(a) & set(c)


def test_two_whole_gpus_are_renumbered_from_zero():
    devices = node_devices(_node(GpuWorker("w", "all-disabled")))[3:5]
    assert [line.split(":")[0] for line in smi_lines(devices)] == ["GPU 0", "GPU 1"]


def test_mig_device_line_has_nvidia_smi_shape():
    device = node_devices(_node(GpuWorker("w", "all-1g.10gb")))[0]
    lines = smi_lines([device])
    assert lines[0].startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    assert MIG_LINE.match(lines[1]).group(1) == "1g.10gb"


def test_gpu_requests_keep_only_gpu_resources():
    assert gpu_requests(_pod({"nvidia.com/mig-1g.10gb": "2", "cpu": "1"})) == {"nvidia.com/mig-1g.10gb": 2}
    assert gpu_requests(_pod({"cpu": "1"})) == {}


def test_echo_text_stops_at_the_shell_separator():
    pod = _pod({}, ["sh", "-c"], ["echo all validations are successful; while true; do sleep 86400; done"])
    assert echo_text(pod) == "all validations are successful"
