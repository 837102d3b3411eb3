"""The article's cluster as API objects: 3 tainted control-plane nodes, 3 H100x8 GPU workers
(KWOK nodes labelled as GPU Feature Discovery and the GPU Operator label real ones, capacity
from the MIG catalog), and the GPU Operator as the article deploys it (namespace gpu-operator,
ClusterPolicy with the article's Helm values, operand DaemonSets, validator pods).
"""
from __future__ import annotations

import dataclasses
import secrets

import yaml
from kubernetes import client

from gpuconform.mig import gpu_model, mig_count_labels, mig_resource_name, mixed_strategy_resources
from testbed.cluster.kube import create_or_update
from testbed.cluster.waiting import wait_for

NAMESPACE = "gpu-operator"
KWOK_ANNOTATIONS = {"kwok.x-k8s.io/node": "fake"}
GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
DRIVER_VERSION = "580.95.05"
CUDA_VERSION = "13.0"
KUBELET_VERSION = "v1.35.8"
OPERATOR_VERSION = "v25.10.0"
TESTBED_LABEL = {"app.kubernetes.io/managed-by": "gpuconform-testbed"}

#: operand DaemonSets (formats.md 6.2): name -> (gpu.deploy label suffix, image, service account)
OPERANDS = {
    "gpu-feature-discovery": ("gpu-feature-discovery", "nvcr.io/nvidia/k8s-device-plugin:v0.18.0", "nvidia-gpu-feature-discovery"),
    "nvidia-container-toolkit-daemonset": ("container-toolkit", "nvcr.io/nvidia/k8s/container-toolkit:v1.18.0", "nvidia-container-toolkit"),
    "nvidia-dcgm-exporter": ("dcgm-exporter", "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.1-4.6.0-ubuntu22.04", "nvidia-dcgm-exporter"),
    "nvidia-device-plugin-daemonset": ("device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.18.0", "nvidia-device-plugin"),
    "nvidia-mig-manager": ("mig-manager", "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.13.0", "nvidia-mig-manager"),
    "nvidia-operator-validator": ("operator-validator", f"nvcr.io/nvidia/gpu-operator:{OPERATOR_VERSION}", "nvidia-operator-validator"),
}
VALIDATOR_INIT_CONTAINERS = ("driver-validation", "toolkit-validation", "cuda-validation", "plugin-validation")
DEPLOY_COMPONENTS = ("container-toolkit", "dcgm", "dcgm-exporter", "device-plugin", "driver",
                     "gpu-feature-discovery", "mig-manager", "node-status-exporter", "nvsm",
                     "operator-validator")


@dataclasses.dataclass(frozen=True)
class GpuWorker:
    name: str
    mig_config: str
    model: str = "H100-80GB"
    gpu_count: int = 8


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


def gpu_node_labels(worker: GpuWorker, *, config_state: str = "success") -> dict[str, str]:
    """Labels GFD, NFD, the GPU Operator and mig-manager put on a real node of this kind."""
    m = gpu_model(worker.model)
    mig_on = worker.mig_config != "all-disabled"
    major, minor, rev = DRIVER_VERSION.split(".")
    labels = {
        "feature.node.kubernetes.io/pci-10de.present": "true",
        "nvidia.com/cuda.driver-version.full": DRIVER_VERSION,
        "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor,
        "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.runtime-version.full": CUDA_VERSION,
        "nvidia.com/cuda.runtime-version.major": CUDA_VERSION.split(".")[0],
        "nvidia.com/cuda.runtime-version.minor": CUDA_VERSION.split(".")[1],
        "nvidia.com/gpu.compute.major": "9" if m.family == "hopper" else "8",
        "nvidia.com/gpu.compute.minor": "0",
        "nvidia.com/gpu.count": str(worker.gpu_count),
        "nvidia.com/gpu.family": m.family,
        "nvidia.com/gpu.machine": "SYS-821GE-TNHR",
        "nvidia.com/gpu.memory": str(m.memory_mib),
        "nvidia.com/gpu.present": "true",
        "nvidia.com/gpu.product": m.product,
        "nvidia.com/gpu.replicas": "0" if mig_on else "1",
        "nvidia.com/gpu.sharing-strategy": "none",
        "nvidia.com/mig.capable": "true",
        "nvidia.com/mig.config": worker.mig_config,
        "nvidia.com/mig.config.state": config_state,
        "nvidia.com/mig.strategy": "mixed",
        "nvidia.com/mps.capable": "false",
        **{f"nvidia.com/gpu.deploy.{c}": "true" for c in DEPLOY_COMPONENTS},
    }
    cfg = m.configs[worker.mig_config]
    for profile_name in cfg.devices:
        p = m.profile(profile_name)
        prefix = mig_resource_name(profile_name)[len("nvidia.com/"):]
        labels.update({
            f"nvidia.com/{prefix}.multiprocessors": str(p.multiprocessors),
            f"nvidia.com/{prefix}.product": f"{m.product}-MIG-{profile_name}",
            f"nvidia.com/{prefix}.replicas": "1",
            f"nvidia.com/{prefix}.sharing-strategy": "none",
            f"nvidia.com/{prefix}.slices.ci": str(p.compute_slices),
            f"nvidia.com/{prefix}.slices.gi": str(p.compute_slices),
        })
    labels.update(mig_count_labels(m, worker.gpu_count, worker.mig_config))
    return labels


def gpu_node_resources(worker: GpuWorker) -> dict[str, str]:
    base = {"cpu": "112", "memory": "2063937Mi", "pods": "110", "ephemeral-storage": "3500Gi",
            "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    gpu = mixed_strategy_resources(worker.model, worker.gpu_count, worker.mig_config)
    return {**base, **{k: str(v) for k, v in gpu.items()}}


def gpu_worker_node(worker: GpuWorker) -> dict:
    resources = gpu_node_resources(worker)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {
            "name": worker.name, "annotations": dict(KWOK_ANNOTATIONS),
            "labels": {"kubernetes.io/hostname": worker.name, "kubernetes.io/os": "linux",
                       "kubernetes.io/arch": "amd64", "type": "kwok", **TESTBED_LABEL,
                       **gpu_node_labels(worker)},
        },
        "spec": {"taints": [dict(GPU_TAINT)]},
        "status": {"capacity": resources, "allocatable": resources,
                   "nodeInfo": _node_info("RED OS MUROM (7.3.4)")},
    }


# -- GPU Operator objects ---------------------------------------------------------------------
def cluster_policy(state: str = "ready") -> dict:
    """The ClusterPolicy the Helm chart renders from the article's values."""
    gpu_toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    return {
        "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy", "labels": {"app.kubernetes.io/component": "gpu-operator",
                                                          **TESTBED_LABEL}},
        "spec": {
            "operator": {"defaultRuntime": "containerd", "runtimeClass": "nvidia", "initContainer": {}},
            "daemonsets": {"tolerations": [gpu_toleration], "priorityClassName": "system-node-critical",
                           "updateStrategy": "RollingUpdate"},
            "driver": {"enabled": False},
            "toolkit": {"enabled": True},
            "devicePlugin": {"enabled": True},
            "dcgm": {"enabled": False},
            "dcgmExporter": {"enabled": True},
            "gfd": {"enabled": True},
            "mig": {"strategy": "mixed"},
            "migManager": {"enabled": True, "config": {"name": "default-mig-parted-config",
                                                        "default": "all-disabled"}},
            "nodeStatusExporter": {"enabled": False},
            "validator": {"driver": {"env": [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]},
                          "plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "false"}]}},
            "vgpuManager": {"enabled": False},
            "vgpuDeviceManager": {"enabled": False},
            "vfioManager": {"enabled": False},
            "sandboxDevicePlugin": {"enabled": False},
            "sandboxWorkloads": {"enabled": False, "defaultWorkload": "container"},
            "cdi": {"enabled": False},
            "gds": {"enabled": False},
            "gdrcopy": {"enabled": False},
            "kataManager": {"enabled": False},
            "ccManager": {"enabled": False},
            "psa": {"enabled": False},
        },
    }


def cluster_policy_status(state: str) -> dict:
    ready = state == "ready"
    return {"status": {
        "state": state, "namespace": NAMESPACE,
        "conditions": [
            {"type": "Ready", "status": "True" if ready else "False",
             "reason": "Reconciled" if ready else "OperandNotReady",
             "message": "" if ready else "ClusterPolicy is not ready, states not ready: [state-device-plugin]",
             "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Error", "status": "False" if ready else "True",
             "reason": "Ready" if ready else "OperandNotReady",
             "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
        ],
    }}


def mig_parted_configmap(model: str = "H100-80GB") -> dict:
    m = gpu_model(model)
    configs = {}
    for name, cfg in m.configs.items():
        entry = {"devices": "all", "mig-enabled": cfg.mig_enabled}
        if cfg.mig_enabled:
            entry["mig-devices"] = dict(cfg.devices)
        configs[name] = [entry]
    return {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "default-mig-parted-config", "namespace": NAMESPACE, "labels": dict(TESTBED_LABEL)},
        "data": {"config.yaml": yaml.safe_dump({"version": "v1", "mig-configs": configs}, sort_keys=False)},
    }


def operand_daemonset(name: str) -> dict:
    component, image, sa = OPERANDS[name]
    labels = {"app": name, "app.kubernetes.io/part-of": "gpu-operator"}
    container = {"name": name if name != "nvidia-operator-validator" else "nvidia-operator-validator",
                 "image": image, "securityContext": {"privileged": True}}
    pod_spec: dict = {
        "nodeSelector": {f"nvidia.com/gpu.deploy.{component}": "true"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "priorityClassName": "system-node-critical",
        "serviceAccountName": sa,
        "containers": [container],
    }
    if name == "nvidia-operator-validator":
        container.update(command=["sh", "-c"],
                         args=["echo all validations are successful; while true; do sleep 86400; done"])
        pod_spec["initContainers"] = [
            {"name": c, "image": image, "command": ["sh", "-c"], "args": ["nvidia-validator"],
             "securityContext": {"privileged": True},
             "env": ([{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]
                     if c == "driver-validation" else [])}
            for c in VALIDATOR_INIT_CONTAINERS]
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {**labels, **TESTBED_LABEL}},
        "spec": {"selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": pod_spec}},
    }


def operator_deployment() -> dict:
    labels = {"app": "gpu-operator", "app.kubernetes.io/component": "gpu-operator"}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "gpu-operator", "namespace": NAMESPACE, "labels": {**labels, **TESTBED_LABEL}},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {
                     "serviceAccountName": "gpu-operator",
                     "priorityClassName": "system-node-critical",
                     "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                                      "effect": "NoSchedule"}],
                     "containers": [{"name": "gpu-operator", "image": f"nvcr.io/nvidia/gpu-operator:{OPERATOR_VERSION}",
                                     "command": ["gpu-operator"]}]}}},
    }


def validator_workload_pod(kind: str, worker: GpuWorker) -> dict:
    """nvidia-cuda-validator-* / nvidia-device-plugin-validator-* pods the validator starts."""
    name = f"nvidia-{kind}-validator"
    spec_container: dict = {"name": f"{kind}-validation", "image": f"nvcr.io/nvidia/gpu-operator:{OPERATOR_VERSION}",
                            "command": ["sh", "-c"],
                            "args": [f"echo {kind if kind == 'cuda' else 'device-plugin'} workload validation is successful"]}
    if kind == "device-plugin":
        resources = mixed_strategy_resources(worker.model, worker.gpu_count, worker.mig_config)
        first = sorted(resources)[0]
        spec_container["resources"] = {"limits": {first: "1"}, "requests": {first: "1"}}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{name}-{secrets.token_hex(3)[:5]}", "namespace": NAMESPACE,
                     "labels": {"app": name, "app.kubernetes.io/part-of": "gpu-operator", **TESTBED_LABEL}},
        "spec": {"nodeName": worker.name, "restartPolicy": "Never",
                 "serviceAccountName": "nvidia-operator-validator",
                 "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                 "containers": [spec_container]},
    }


# -- laying it out ----------------------------------------------------------------------------
class Platform:
    """Creates the objects above and waits until they look like the article's healthy cluster."""

    def __init__(self, api: client.ApiClient, workers=ARTICLE_WORKERS, control_plane=CONTROL_PLANE_NODES):
        self.api = api
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.workers = tuple(workers)
        self.control_plane = tuple(control_plane)

    def worker(self, name: str) -> GpuWorker:
        for w in self.workers:
            if w.name == name:
                return w
        raise KeyError(f"no GPU worker {name!r}; have {[w.name for w in self.workers]}")

    def create(self, timeout: float = 120) -> None:
        for name in self.control_plane:
            create_or_update(self.core.create_node, self.core.patch_node, control_plane_node(name))
        for w in self.workers:
            create_or_update(self.core.create_node, self.core.patch_node, gpu_worker_node(w))
        self.create_operator()
        self.wait_healthy(timeout)

    def create_operator(self) -> None:
        create_or_update(self.core.create_namespace, self.core.patch_namespace, {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "privileged",
                                                       **TESTBED_LABEL}}})
        for sa in {"gpu-operator", *(v[2] for v in OPERANDS.values())}:
            create_or_update(self.core.create_namespaced_service_account, self.core.patch_namespaced_service_account,
                             {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": sa}}, NAMESPACE)
        create_or_update(self.core.create_namespaced_config_map, self.core.patch_namespaced_config_map,
                         mig_parted_configmap(self.workers[0].model), NAMESPACE)
        create_or_update(self.apps.create_namespaced_deployment, self.apps.patch_namespaced_deployment,
                         operator_deployment(), NAMESPACE)
        for name in OPERANDS:
            create_or_update(self.apps.create_namespaced_daemon_set, self.apps.patch_namespaced_daemon_set,
                             operand_daemonset(name), NAMESPACE)
        cp = cluster_policy()
        create_or_update(lambda body: self.custom.create_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", body),
                         lambda name, body: self.custom.patch_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", name, body),
                         cp)
        self.set_cluster_policy_state("ready")
        self.ensure_validator_pods()

    def set_cluster_policy_state(self, state: str) -> None:
        self.custom.patch_cluster_custom_object_status("nvidia.com", "v1", "clusterpolicies", "cluster-policy",
                                                       cluster_policy_status(state))

    def ensure_validator_pods(self) -> None:
        """One Completed cuda and device-plugin validator pod per GPU worker (recreated if failed)."""
        pods = self.core.list_namespaced_pod(NAMESPACE).items
        for w in self.workers:
            for kind in ("cuda", "device-plugin"):
                app = f"nvidia-{kind}-validator"
                mine = [p for p in pods if (p.metadata.labels or {}).get("app") == app and p.spec.node_name == w.name]
                good = [p for p in mine if p.status.phase != "Failed" and not p.metadata.deletion_timestamp]
                for p in mine:
                    if p not in good:
                        self.core.delete_namespaced_pod(p.metadata.name, NAMESPACE, grace_period_seconds=0)
                if not good:
                    self.core.create_namespaced_pod(NAMESPACE, validator_workload_pod(kind, w))

    # -- health -----------------------------------------------------------------------------
    def health_problems(self) -> list[str]:
        """What differs from the healthy article cluster (empty list = healthy)."""
        problems = []
        nodes = {n.metadata.name: n for n in self.core.list_node().items}
        for name in (*self.control_plane, *(w.name for w in self.workers)):
            node = nodes.get(name)
            ready = node and any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))
            if not ready:
                problems.append(f"node {name} not Ready")
        for ds in self.apps.list_namespaced_daemon_set(NAMESPACE).items:
            st = ds.status
            if ds.metadata.name in OPERANDS and (st.desired_number_scheduled != len(self.workers)
                                                 or (st.number_ready or 0) != len(self.workers)
                                                 or (st.observed_generation or 0) < ds.metadata.generation):
                problems.append(f"daemonset {ds.metadata.name} ready {st.number_ready}/{st.desired_number_scheduled}")
        dep = self.apps.read_namespaced_deployment("gpu-operator", NAMESPACE)
        if (dep.status.available_replicas or 0) < 1:
            problems.append("deployment gpu-operator not available")
        for p in self.core.list_namespaced_pod(NAMESPACE).items:
            app = (p.metadata.labels or {}).get("app", "")
            if app in ("nvidia-cuda-validator", "nvidia-device-plugin-validator") and p.status.phase != "Succeeded":
                problems.append(f"pod {p.metadata.name} {p.status.phase}")
        cp = self.custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")
        if (cp.get("status") or {}).get("state") != "ready":
            problems.append(f"clusterpolicy state {(cp.get('status') or {}).get('state')}")
        return problems

    def wait_healthy(self, timeout: float) -> None:
        def healthy():
            problems = self.health_problems()
            if problems:
                raise AssertionError("; ".join(problems))
            return True
        wait_for("the simulated platform to be healthy", healthy, timeout)
