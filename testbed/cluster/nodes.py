"""The nodes of the article's cluster as the platform team and the hardware provide them: 3 tainted
control-plane nodes and 3 bare-metal H100x8 GPU workers (KWOK nodes) as the kubelet registers
them, labelled as Node Feature Discovery would (NFD's subchart is not deployed:
``feature.node.kubernetes.io/pci-10de.present`` etc., the labels the operator selects GPU nodes
by, NVIDIA/gpu-operator controllers/state_manager.go gpuNodeLabels), with their simulated GPUs
(annotation read by ``nodeagent.py``) and the admin's ``nvidia.com/mig.config`` label."""
from __future__ import annotations

import dataclasses
import functools
import json

import yaml

from testbed.cluster import migparted
from testbed.cluster.hardware import GPUS, H100_SXM5_80GB
from testbed.cluster.nodeagent import ANN_GPUS, gfd_labels, plugin_resources
from testbed.gpuoperator import binaries, operator

NAMESPACE = operator.NAMESPACE
CLUSTER_POLICY = "cluster-policy"
KWOK_ANNOTATIONS = {"kwok.x-k8s.io/node": "fake"}
GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
DRIVER_VERSION = "580.95.05"   # the article's driver (formats.md 3.1)
CUDA_VERSION = "13.0"          # what driver 580 reports as its CUDA version (formats.md 3.1)
KUBELET_VERSION = "v1.35.8"
TESTBED_LABEL = {"app.kubernetes.io/managed-by": "gpuconform-testbed"}
#: NFD's labels on a node with an NVIDIA PCI device (formats.md 5.1) and the OS it reads
NFD_LABELS = {"feature.node.kubernetes.io/pci-10de.present": "true",
              "feature.node.kubernetes.io/pci-10de.sriov.capable": "true",
              "feature.node.kubernetes.io/system-os_release.ID": "redos",
              "feature.node.kubernetes.io/system-os_release.VERSION_ID": "7.3",
              "feature.node.kubernetes.io/kernel-version.full": "6.12.21-1.red80.x86_64"}


@dataclasses.dataclass(frozen=True)
class GpuWorker:
    name: str
    mig_config: str | None                       # the admin's nvidia.com/mig.config label (None: none set)
    gpu: str = H100_SXM5_80GB.product_label      # hardware.GPUS key
    gpu_count: int = 8
    machine: str = "SYS-821GE-TNHR"              # Supermicro HGX H100 8-GPU server


#: The article's three bare-metal H100 workers, one per MIG layout the checks must tell apart.
ARTICLE_WORKERS = (
    GpuWorker("gpu-worker-1", "all-1g.10gb"),
    GpuWorker("gpu-worker-2", "all-balanced"),
    GpuWorker("gpu-worker-3", "all-disabled"),
)
CONTROL_PLANE_NODES = ("control-plane-1", "control-plane-2", "control-plane-3")


def _node_info(os_image: str) -> dict:
    return {
        "architecture": "amd64", "operatingSystem": "linux", "osImage": os_image,
        "kernelVersion": "6.12.21-1.red80.x86_64", "kubeletVersion": KUBELET_VERSION,
        "kubeProxyVersion": "", "containerRuntimeVersion": "containerd://1.7.27",
        "machineID": "", "systemUUID": "", "bootID": "",
    }


def control_plane_node(name: str) -> dict:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": name, "annotations": dict(KWOK_ANNOTATIONS),
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "node-role.kubernetes.io/control-plane": "",
                       "type": "kwok", **TESTBED_LABEL},
        },
        "spec": {"taints": [dict(CONTROL_PLANE_TAINT)]},
        "status": {"capacity": capacity, "allocatable": capacity,
                   "nodeInfo": _node_info("RED OS MUROM (7.3.4) (virtual)")},
    }


def simulated_gpus(worker: GpuWorker, layout: list | None = None) -> dict:
    """The node's GPUs as nodeagent.py reads them (MIG disabled on every GPU unless ``layout``)."""
    return {"product": worker.gpu, "count": worker.gpu_count, "machine": worker.machine,
            "driver": DRIVER_VERSION, "cuda": CUDA_VERSION,
            "layout": layout if layout is not None else [None] * worker.gpu_count}


def gpu_worker_node(worker: GpuWorker) -> dict:
    """A GPU worker as the kubelet registers it, NFD-labelled, before any operand ran."""
    base = {"cpu": "112", "memory": "2063937Mi", "pods": "110", "ephemeral-storage": "3500Gi",
            "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": worker.name,
            "annotations": {**KWOK_ANNOTATIONS, ANN_GPUS: json.dumps(simulated_gpus(worker))},
            "labels": {"kubernetes.io/hostname": worker.name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "type": "kwok", **TESTBED_LABEL, **NFD_LABELS,
                       **({"nvidia.com/mig.config": worker.mig_config} if worker.mig_config else {})},
        },
        "spec": {"taints": [dict(GPU_TAINT)]},
        "status": {"capacity": base, "allocatable": base, "nodeInfo": _node_info("RED OS MUROM (7.3.4)")},
    }


@functools.cache
def _nvidia_default_configs():
    """NVIDIA's default-mig-parted-config (the operator's asset), parsed once: parsing it per node
    was most of the time to build 10,000 published nodes (issue #27)."""
    asset = binaries.module_dir() / "assets" / "state-mig-manager" / "0400_configmap.yaml"
    return migparted.load(yaml.safe_load(asset.read_text())["data"]["config.yaml"])


def nvidia_default_layout(worker: GpuWorker) -> list:
    """The layout NVIDIA's default-mig-parted-config gives ``worker``."""
    return migparted.apply(_nvidia_default_configs(), worker.mig_config, GPUS[worker.gpu], [None] * worker.gpu_count)


def published_node(worker: GpuWorker) -> dict:
    """A GPU worker as it looks once every operand has run on it with NVIDIA's default layout
    for its config (for benchmarks that create many nodes without running the operands)."""
    hw = simulated_gpus(worker, nvidia_default_layout(worker))
    node = gpu_worker_node(worker)
    node["metadata"]["annotations"][ANN_GPUS] = json.dumps(hw)
    node["metadata"]["labels"].update(gfd_labels(hw, "mixed"))
    node["metadata"]["labels"].update({"nvidia.com/gpu.present": "true", "nvidia.com/mig.config.state": "success"})
    resources = {k: str(v) for k, v in plugin_resources(hw, "mixed").items()}
    for key in ("capacity", "allocatable"):
        node["status"][key].update(resources)
    return node
