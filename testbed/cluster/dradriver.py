"""A stand-in for NVIDIA's DRA driver for GPUs (NVIDIA/k8s-dra-driver-gpu) on the simulated GPU
workers: its kubelet plugin reads the GPUs through NVML, which KWOK nodes do not have, so this
writes what the plugin would publish for each node's simulated GPUs, and the DeviceClass its
Helm chart installs.

What it writes follows the driver's source:
* the DeviceClass ``gpu.nvidia.com``, selecting ``device.driver == 'gpu.nvidia.com' &&
  device.attributes['gpu.nvidia.com'].type == 'gpu'`` (the chart's deviceclass template);
* one ResourceSlice per node (driver ``gpu.nvidia.com``, pool named after the node, as the
  kubelet plugin's ResourceSlice controller publishes one pool per node), with a device
  ``gpu-<minor>`` per whole GPU and the attributes of ``cmd/gpu-kubelet-plugin/deviceinfo.go``
  GpuInfo.GetDevice: type, uuid, productName, brand, architecture, and the versions
  cudaComputeCapability, driverVersion, cudaDriverVersion as semantic versions (the plugin
  parses NVML's strings with Masterminds/semver: "580.95.05" becomes 580.95.5, "13.0" 13.0.0);
  capacity ``memory``.
MIG devices (type ``mig``) are left out: no check reads them, and their names need the GPU
instance's placement, which the bed does not model for DRA.

``kubelet_plugin_running=False`` is the fault of a driver whose chart is installed but whose
kubelet plugin does not run on the nodes (its pod crash-looping): the DeviceClass exists and no
node publishes a ResourceSlice.

From Python: ``with installed(api): ...`` (a selftest fixture does it)."""
from __future__ import annotations

import contextlib
from typing import Iterator

from kubernetes import client

from testbed.cluster.devices import device_uuid
from testbed.cluster.hardware import GPUS
from testbed.cluster.nodeagent import hardware

DRIVER = "gpu.nvidia.com"
#: the bed's label on what it writes, so that the block's end removes exactly that
PART = {"gpuconform.bed/part": "dra-driver"}


def semver(version: str) -> str:
    """NVML's version string as the plugin's semver.MustParse(...).String() writes it."""
    parts = [str(int(p)) for p in version.split(".")]
    return ".".join(parts + ["0"] * (3 - len(parts)))


def device_class() -> dict:
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": DRIVER, "labels": dict(PART)},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}' && "
                                                          f"device.attributes['{DRIVER}'].type == 'gpu'"}}]}}


def resource_slice(node: client.V1Node) -> dict | None:
    """The ResourceSlice the kubelet plugin publishes for ``node``'s whole GPUs; None: no GPU."""
    hw = hardware(node)
    if not hw:
        return None
    gpu, name = GPUS[hw["product"]], node.metadata.name
    devices = [{"name": f"gpu-{i}", "attributes": {
        "type": {"string": "gpu"}, "uuid": {"string": device_uuid("GPU", name, i)},
        "productName": {"string": gpu.smi_name}, "brand": {"string": "Nvidia"},
        "architecture": {"string": gpu.family.replace("-", " ").title()},  # go-nvlib: "Hopper", "Ada Lovelace"
        "cudaComputeCapability": {"version": semver(".".join(map(str, gpu.compute)))},
        "driverVersion": {"version": semver(hw["driver"])}, "cudaDriverVersion": {"version": semver(hw["cuda"])}},
        "capacity": {"memory": {"value": f"{gpu.memory_mib}Mi"}}}
        for i, layout in enumerate(hw["layout"]) if layout is None]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"generateName": f"{name}-{DRIVER}-", "labels": dict(PART),
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": name,
                                              "uid": node.metadata.uid}]},
            "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1,
                                                                  "resourceSliceCount": 1}, "devices": devices}}


@contextlib.contextmanager
def installed(api: client.ApiClient, kubelet_plugin_running: bool = True) -> Iterator[list[str]]:
    """The driver's DeviceClass and, where its kubelet plugin runs, each GPU node's ResourceSlice,
    while in the block; yields the slices' names."""
    custom, selector = client.CustomObjectsApi(api), ",".join(f"{k}={v}" for k, v in PART.items())
    custom.create_cluster_custom_object("resource.k8s.io", "v1", "deviceclasses", device_class())
    try:
        names = []
        for node in client.CoreV1Api(api).list_node().items if kubelet_plugin_running else []:
            body = resource_slice(node)
            if body is not None:
                names.append(custom.create_cluster_custom_object("resource.k8s.io", "v1", "resourceslices",
                                                                 body)["metadata"]["name"])
        yield names
    finally:
        for plural in ("resourceslices", "deviceclasses"):
            for obj in custom.list_cluster_custom_object("resource.k8s.io", "v1", plural,
                                                         label_selector=selector)["items"]:
                custom.delete_cluster_custom_object("resource.k8s.io", "v1", plural, obj["metadata"]["name"])
