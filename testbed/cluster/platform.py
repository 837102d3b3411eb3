"""The article's cluster: 3 tainted control-plane nodes and 3 bare-metal H100x8 GPU workers
(KWOK nodes), NVIDIA's GPU Operator installed from its chart with the article's values and its
real controller reconciling them (``testbed/gpuoperator``).

What the bed itself writes is only what the platform team or the hardware provides:
* the nodes as the kubelet registers them, labelled as Node Feature Discovery would (NFD's
  subchart is not deployed: ``feature.node.kubernetes.io/pci-10de.present`` etc., the labels the
  operator selects GPU nodes by, controllers/state_manager.go gpuNodeLabels);
* the simulated GPUs of each worker (annotation read by ``nodeagent.py``: model, count, machine,
  driver, MIG layout -- MIG disabled as shipped);
* the admin's ``nvidia.com/mig.config`` label per worker (the article's one layout per worker).
Everything else -- operand DaemonSets, ``nvidia.com/gpu.deploy.*`` and ``gpu.present`` labels,
the default-mig-parted-config ConfigMap, ClusterPolicy status -- comes from the operator; GFD
labels, allocatable and ``mig.config.state`` from the node agent playing the operands.
"""
from __future__ import annotations

import dataclasses
import json

import yaml
from kubernetes import client

from testbed.cluster import migparted
from testbed.cluster.hardware import GPUS, H100_SXM5_80GB
from testbed.cluster.kube import create_or_update
from testbed.cluster.nodeagent import ANN_GPUS, gfd_labels, plugin_resources
from testbed.cluster.waiting import wait_for
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
    mig_config: str                              # the admin's nvidia.com/mig.config label
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


# -- nodes ------------------------------------------------------------------------------------
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
                       "nvidia.com/mig.config": worker.mig_config},
        },
        "spec": {"taints": [dict(GPU_TAINT)]},
        "status": {"capacity": base, "allocatable": base, "nodeInfo": _node_info("RED OS MUROM (7.3.4)")},
    }


def nvidia_default_layout(worker: GpuWorker) -> list:
    """The layout NVIDIA's default-mig-parted-config (the operator's asset) gives ``worker``."""
    asset = binaries.module_dir() / "assets" / "state-mig-manager" / "0400_configmap.yaml"
    configs = migparted.load(yaml.safe_load(asset.read_text())["data"]["config.yaml"])
    return migparted.apply(configs, worker.mig_config, GPUS[worker.gpu], [None] * worker.gpu_count)


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


# -- laying it out ----------------------------------------------------------------------------
class Platform:
    """Creates the nodes, installs the GPU Operator chart, and waits for the real controller and
    the simulated operands to reach the article's healthy cluster."""

    def __init__(self, api: client.ApiClient, workers=ARTICLE_WORKERS, control_plane=CONTROL_PLANE_NODES,
                 values: dict | None = None):
        self.api = api
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.workers = tuple(workers)
        self.control_plane = tuple(control_plane)
        self.values = operator.merge_values(operator.ARTICLE_VALUES, values or {})
        self.rendered: list[dict] = []

    def worker(self, name: str) -> GpuWorker:
        for w in self.workers:
            if w.name == name:
                return w
        raise KeyError(f"no GPU worker {name!r}; have {[w.name for w in self.workers]}")

    def create_nodes(self) -> None:
        for name in self.control_plane:
            create_or_update(self.core.create_node, self.core.patch_node, control_plane_node(name))
        for w in self.workers:
            create_or_update(self.core.create_node, self.core.patch_node, gpu_worker_node(w))

    def install_operator(self) -> list[dict]:
        """``helm install`` of the operator's chart; returns the rendered objects."""
        self.rendered = operator.install(self.api, self.values, namespace=NAMESPACE)
        return self.rendered

    def upgrade(self, values: dict | None, *, settled=None, timeout: float = 180) -> None:
        """``helm upgrade`` with ``values`` over the article's (None: back to the article's).
        The operator then rolls its operands at its own pace: wait until ``settled()`` (the
        change the caller made is visible) and the platform is healthy again."""
        self.values = operator.merge_values(operator.ARTICLE_VALUES, values or {})
        self.rendered = operator.upgrade(self.api, self.rendered, self.values, namespace=NAMESPACE)
        if settled is not None:
            wait_for("the upgrade to take effect", settled, timeout)
        self.wait_healthy(timeout)

    def gpu_allocatable(self) -> dict[str, dict[str, str]]:
        """Per GPU worker, its non-zero nvidia.com/* allocatable."""
        return {w.name: {k: str(v) for k, v in (self.core.read_node(w.name).status.allocatable or {}).items()
                         if k.startswith("nvidia.com/") and str(v) != "0"} for w in self.workers}

    # -- health -----------------------------------------------------------------------------
    def cluster_policy(self) -> dict:
        return self.custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", CLUSTER_POLICY)

    def expected_allocatable(self, node: client.V1Node) -> dict[str, int]:
        hw = json.loads(node.metadata.annotations[ANN_GPUS])
        strategy = (self.values.get("mig") or {}).get("strategy", "single")
        return {k: v for k, v in plugin_resources(hw, strategy).items() if v}

    def health_problems(self) -> list[str]:
        """What differs from the healthy article cluster (empty list = healthy)."""
        problems = []
        nodes = {n.metadata.name: n for n in self.core.list_node().items}
        for name in (*self.control_plane, *(w.name for w in self.workers)):
            node = nodes.get(name)
            if not (node and any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))):
                problems.append(f"node {name} not Ready")
        for w in self.workers:
            node = nodes.get(w.name)
            if node is None:
                continue
            labels = node.metadata.labels or {}
            if labels.get("nvidia.com/mig.config.state") != "success":
                problems.append(f"{w.name} mig.config.state={labels.get('nvidia.com/mig.config.state')}")
            have = {k: int(str(v)) for k, v in (node.status.allocatable or {}).items()
                    if k.startswith("nvidia.com/") and str(v) != "0"}
            if have != self.expected_allocatable(node):
                problems.append(f"{w.name} allocatable {have}")
        dss = self.apps.list_namespaced_daemon_set(NAMESPACE).items
        if not dss:
            problems.append("no operand DaemonSets yet")
        for ds in dss:
            st = ds.status
            if (st.number_ready or 0) != (st.desired_number_scheduled or 0):
                problems.append(f"daemonset {ds.metadata.name} ready {st.number_ready}/{st.desired_number_scheduled}")
        pods = self.core.list_namespaced_pod(NAMESPACE, label_selector="app=nvidia-cuda-validator").items
        for w in self.workers:
            if not any(p.spec.node_name == w.name and p.status.phase == "Succeeded" for p in pods):
                problems.append(f"{w.name}: no Succeeded nvidia-cuda-validator pod")
        state = (self.cluster_policy().get("status") or {}).get("state")
        if state != "ready":
            problems.append(f"clusterpolicy state {state}")
        return problems

    def wait_healthy(self, timeout: float) -> None:
        def healthy():
            problems = self.health_problems()
            if problems:
                raise AssertionError("; ".join(problems))
            return True
        wait_for("the simulated platform to be healthy", healthy, timeout)


__all__ = ["ARTICLE_WORKERS", "CONTROL_PLANE_NODES", "GPUS", "GpuWorker", "NAMESPACE", "Platform",
           "gpu_worker_node", "published_node"]
