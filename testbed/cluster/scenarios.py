"""Fault scenarios a test switches on for itself, and the reset back to the healthy cluster.

Each scenario waits until its fault is visible through the API, so a check can run at once.

=============================  ==========================================================
name                           fault
=============================  ==========================================================
clusterpolicy-notready         ClusterPolicy ``cluster-policy`` status.state=notReady
operand-daemonset-short        nvidia-device-plugin-daemonset pod on gpu-worker-2 in
                               CrashLoopBackOff: the DaemonSet has 2 of 3 pods ready
operand-daemonset-unscheduled  gpu-worker-2 loses ``nvidia.com/gpu.deploy.device-plugin``:
                               no device-plugin pod there (desired 2 on 3 GPU workers)
validator-failing              nvidia-operator-validator pod on gpu-worker-1 stuck in Init
                               (RunContainerError ``... last insn is not an exit or jmp``)
mig-config-failed              gpu-worker-2 ``nvidia.com/mig.config.state=failed``
allocatable-mismatch           gpu-worker-1 advertises 49 ``nvidia.com/mig-1g.10gb``, not 56
vectoradd-failing              every new GPU pod logs ``Failed to allocate device vector A
                               (error code CUDA-capable device(s) is/are busy or
                               unavailable)!`` and fails (Never) or crash-loops (OnFailure)
gpu-worker-notready            gpu-worker-3 Ready=False (KubeletNotReady)
=============================  ==========================================================
"""
from __future__ import annotations

from typing import Callable

from kubernetes import client

from testbed.cluster.devicesim import ANN_SIMULATE, SCENARIO_CONFIGMAP
from testbed.cluster.kube import ignore_not_found
from testbed.cluster.platform import NAMESPACE, Platform, gpu_node_labels, gpu_node_resources
from testbed.cluster.waiting import wait_for

SCENARIO_TIMEOUT = 60.0


def _node_ready(core: client.CoreV1Api, name: str) -> bool:
    node = core.read_node(name)
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


def _operand_pod(core: client.CoreV1Api, app: str, node: str) -> client.V1Pod:
    pods = core.list_namespaced_pod(NAMESPACE, label_selector=f"app={app}",
                                    field_selector=f"spec.nodeName={node}").items
    pods = [p for p in pods if not p.metadata.deletion_timestamp]
    if not pods:
        raise LookupError(f"no {app} pod on {node}")
    return pods[0]


def _ds_ready(apps: client.AppsV1Api, name: str) -> tuple[int, int]:
    st = apps.read_namespaced_daemon_set(name, NAMESPACE).status
    return st.number_ready or 0, st.desired_number_scheduled or 0


class Scenarios:
    def __init__(self, platform: Platform):
        self.p = platform
        self.core, self.apps = platform.core, platform.apps
        self.active: list[str] = []
        self._table: dict[str, Callable[[], None]] = {
            "clusterpolicy-notready": self._clusterpolicy_notready,
            "operand-daemonset-short": self._operand_daemonset_short,
            "operand-daemonset-unscheduled": self._operand_daemonset_unscheduled,
            "validator-failing": self._validator_failing,
            "mig-config-failed": self._mig_config_failed,
            "allocatable-mismatch": self._allocatable_mismatch,
            "vectoradd-failing": self._vectoradd_failing,
            "gpu-worker-notready": self._gpu_worker_notready,
        }

    @property
    def names(self) -> list[str]:
        return sorted(self._table)

    def apply(self, name: str) -> None:
        if name not in self._table:
            raise KeyError(f"unknown scenario {name!r}; known: {self.names}")
        self._table[name]()
        self.active.append(name)

    # -- the faults -------------------------------------------------------------------------
    def _clusterpolicy_notready(self) -> None:
        self.p.set_cluster_policy_state("notReady")

    def _annotate_pod(self, app: str, node: str, fault: str) -> str:
        pod = _operand_pod(self.core, app, node)
        self.core.patch_namespaced_pod(pod.metadata.name, NAMESPACE,
                                       {"metadata": {"annotations": {ANN_SIMULATE: fault}}})
        return pod.metadata.name

    def _operand_daemonset_short(self) -> None:
        self._annotate_pod("nvidia-device-plugin-daemonset", "gpu-worker-2", "crashloop")
        wait_for("nvidia-device-plugin-daemonset to have one pod not ready",
                 lambda: _ds_ready(self.apps, "nvidia-device-plugin-daemonset")[0] == len(self.p.workers) - 1,
                 SCENARIO_TIMEOUT)

    def _operand_daemonset_unscheduled(self) -> None:
        self.core.patch_node("gpu-worker-2", {"metadata": {"labels": {"nvidia.com/gpu.deploy.device-plugin": "false"}}})
        wait_for("nvidia-device-plugin-daemonset to leave gpu-worker-2",
                 lambda: _ds_ready(self.apps, "nvidia-device-plugin-daemonset") == (len(self.p.workers) - 1,) * 2,
                 SCENARIO_TIMEOUT)

    def _validator_failing(self) -> None:
        name = self._annotate_pod("nvidia-operator-validator", "gpu-worker-1", "init-error")
        wait_for(f"validator pod {name} to be stuck in Init",
                 lambda: self.core.read_namespaced_pod(name, NAMESPACE).status.phase == "Pending",
                 SCENARIO_TIMEOUT)

    def _mig_config_failed(self) -> None:
        self.core.patch_node("gpu-worker-2", {"metadata": {"labels": {"nvidia.com/mig.config.state": "failed"}}})

    def _allocatable_mismatch(self) -> None:
        worker = self.p.worker("gpu-worker-1")
        resources = gpu_node_resources(worker)
        resources["nvidia.com/mig-1g.10gb"] = str(int(resources["nvidia.com/mig-1g.10gb"]) - 7)
        self.core.patch_node_status(worker.name, {"status": {"capacity": resources, "allocatable": resources}})

    def _vectoradd_failing(self) -> None:
        ns, name = SCENARIO_CONFIGMAP
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"cuda": "fail"}}
        ignore_not_found(self.core.delete_namespaced_config_map, name, ns)
        self.core.create_namespaced_config_map(ns, body)

    def _gpu_worker_notready(self) -> None:
        self.core.patch_node("gpu-worker-3", {"metadata": {"annotations": {ANN_SIMULATE: "not-ready"}}})
        wait_for("gpu-worker-3 to be NotReady", lambda: not _node_ready(self.core, "gpu-worker-3"), SCENARIO_TIMEOUT)

    # -- back to healthy --------------------------------------------------------------------
    def reset(self, timeout: float = 120) -> None:
        """Undo every fault (whatever applied it) and wait for the healthy cluster."""
        ns, name = SCENARIO_CONFIGMAP
        ignore_not_found(self.core.delete_namespaced_config_map, name, ns)
        for w in self.p.workers:
            node = self.core.read_node(w.name)
            labels = gpu_node_labels(w)
            stale = {k: None for k in (node.metadata.labels or {}) if k.startswith("nvidia.com/") and k not in labels}
            annotations = {ANN_SIMULATE: None} if ANN_SIMULATE in (node.metadata.annotations or {}) else {}
            self.core.patch_node(w.name, {"metadata": {"labels": {**labels, **stale}, "annotations": annotations}})
            resources = gpu_node_resources(w)
            alloc = node.status.allocatable or {}
            gone = {k: None for k in alloc if k.startswith("nvidia.com/") and k not in resources}
            if any(alloc.get(k) != v for k, v in resources.items()) or gone:
                self.core.patch_node_status(w.name, {"status": {"capacity": {**resources, **gone},
                                                                "allocatable": {**resources, **gone}}})
        self.p.set_cluster_policy_state("ready")
        for pod in self.core.list_namespaced_pod(NAMESPACE).items:
            if ANN_SIMULATE in (pod.metadata.annotations or {}) and not pod.metadata.deletion_timestamp:
                ignore_not_found(self.core.delete_namespaced_pod, pod.metadata.name, NAMESPACE,
                                 grace_period_seconds=0)
        self.p.ensure_validator_pods()
        self.active.clear()
        self.p.wait_healthy(timeout)
