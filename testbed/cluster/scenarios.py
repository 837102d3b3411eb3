"""Fault scenarios a test switches on for itself, and the reset back to the healthy cluster.

Every fault is made where it arises on a real platform -- on a node, in the hardware, in the
admin's labels or Helm values -- and the rest follows from the real controllers (the GPU
Operator, the DaemonSet controller, the scheduler) and the simulated operands (nodeagent.py).
Nothing writes a ClusterPolicy status or an expected value. Each scenario waits until its fault
is visible through the API, so a check can run at once.

=============================  ==========================================================
name                           fault -> what the platform then shows
=============================  ==========================================================
clusterpolicy-notready         the device plugin crash-loops on gpu-worker-2 -> its DaemonSet
                               2/3 ready -> the operator sets ClusterPolicy notReady
operand-daemonset-short        dcgm-exporter crash-loops on gpu-worker-2 -> 2/3 ready ->
                               ClusterPolicy notReady
operand-daemonset-unscheduled  the admin disables the device plugin on gpu-worker-2
                               (``nvidia.com/gpu.deploy.device-plugin=false``, honoured by the
                               operator) -> no device-plugin pod there
validator-failing              gpu-worker-1 has net.core.bpf_jit_harden=2: the validator's
                               first init container cannot start (RunContainerError
                               ``... last insn is not an exit or jmp``) -> ClusterPolicy
                               notReady
mig-config-failed              gpu-worker-2 rebooted (its MIG devices are gone) while a process
                               holds a GPU: the MIG manager's re-apply ends ``failed``
allocatable-mismatch           GPU 3 of gpu-worker-1 fell off the bus: the device plugin
                               advertises 49 ``nvidia.com/mig-1g.10gb``, not 56
operands-disabled              the admin labels gpu-worker-2 ``nvidia.com/gpu.deploy.operands=false``:
                               the operator removes every operand's deploy label there ("Operands
                               are disabled for node"), the DaemonSets leave the node
gpu-lost                       the same on any site: GPU 3 of gpu-worker-1 fell off the bus, the
                               device plugin advertises that GPU's devices no more
vectoradd-failing              every new GPU pod logs ``Failed to allocate device vector A
                               (error code CUDA-capable device(s) is/are busy or
                               unavailable)!`` and fails (Never) or crash-loops (OnFailure)
gpu-worker-notready            gpu-worker-3 Ready=False (KubeletNotReady)
driver-library-mismatch        the driver packages of every GPU worker were upgraded (libraries
                               580.105.08) without reloading the kernel module (still the node's
                               advertised version): the nvidia-smi a container gets says
                               ``Failed to initialize NVML: Driver/library version mismatch``
=============================  ==========================================================
"""
from __future__ import annotations

import json
from typing import Callable

from kubernetes import client

from testbed.cluster.devices import ANN_DRIVER_LIBRARIES, ANN_SIMULATE, SCENARIO_CONFIGMAP
from testbed.cluster.nodeagent import ANN_BROKEN, ANN_GPUS, ANN_IN_USE, ANN_LOST, APP_MIG, APP_VALIDATOR
from testbed.cluster.platform import NAMESPACE, Platform
from testbed.kube import ignore_not_found
from testbed.waiting import wait_for

SCENARIO_TIMEOUT = 90.0
NODE_FAULTS = (ANN_SIMULATE, ANN_BROKEN, ANN_IN_USE, ANN_LOST, ANN_DRIVER_LIBRARIES)
UPGRADED_LIBRARIES = "580.105.08"


def _node_ready(core: client.CoreV1Api, name: str) -> bool:
    node = core.read_node(name)
    return any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))


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
            "gpu-lost": self._gpu_lost,
            "operands-disabled": self._operands_disabled,
            "vectoradd-failing": self._vectoradd_failing,
            "gpu-worker-notready": self._gpu_worker_notready,
            "driver-library-mismatch": self._driver_library_mismatch,
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
    def _annotate_node(self, node: str, annotations: dict) -> None:
        self.core.patch_node(node, {"metadata": {"annotations": annotations}})

    def _policy_not_ready(self) -> bool:
        """state notReady and the Ready condition False (the operator writes them one after the other)."""
        status = self.p.cluster_policy().get("status") or {}
        ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
        return status.get("state") == "notReady" and bool(ready) and ready[0].get("status") == "False"

    def _break_operand(self, app: str, node: str, how: str) -> None:
        self._annotate_node(node, {ANN_BROKEN: f"{app}={how}"})
        wait_for(f"{app} to have one pod not ready",
                 lambda: _ds_ready(self.apps, app)[0] == len(self.p.workers) - 1, SCENARIO_TIMEOUT)

    def _clusterpolicy_notready(self) -> None:
        self._break_operand("nvidia-device-plugin-daemonset", "gpu-worker-2", "crashloop")
        wait_for("the GPU Operator to set ClusterPolicy notReady", self._policy_not_ready, SCENARIO_TIMEOUT)

    def _operand_daemonset_short(self) -> None:
        self._break_operand("nvidia-dcgm-exporter", "gpu-worker-2", "crashloop")
        wait_for("the GPU Operator to set ClusterPolicy notReady", self._policy_not_ready, SCENARIO_TIMEOUT)

    def _operand_daemonset_unscheduled(self) -> None:
        self.core.patch_node("gpu-worker-2", {"metadata": {"labels": {"nvidia.com/gpu.deploy.device-plugin": "false"}}})
        wait_for("nvidia-device-plugin-daemonset to leave gpu-worker-2",
                 lambda: _ds_ready(self.apps, "nvidia-device-plugin-daemonset") == (len(self.p.workers) - 1,) * 2,
                 SCENARIO_TIMEOUT)

    def _validator_failing(self) -> None:
        self._break_operand("nvidia-operator-validator", "gpu-worker-1", "init-error")
        wait_for("the GPU Operator to set ClusterPolicy notReady", self._policy_not_ready, SCENARIO_TIMEOUT)

    def _mig_config_failed(self) -> None:
        name = "gpu-worker-2"
        node = self.core.read_node(name)
        hw = json.loads(node.metadata.annotations[ANN_GPUS])
        hw["layout"] = [None] * len(hw["layout"])   # MIG devices do not survive a reboot
        self._annotate_node(name, {ANN_GPUS: json.dumps(hw), ANN_IN_USE: "pid 4242 (python3) holds /dev/nvidia3"})
        self._restart_mig_manager(name)
        wait_for(f"{name} nvidia.com/mig.config.state=failed",
                 lambda: (self.core.read_node(name).metadata.labels or {}).get("nvidia.com/mig.config.state")
                 == "failed", SCENARIO_TIMEOUT)

    def _restart_mig_manager(self, node: str) -> None:
        """The mig-manager pod starting again (after a reboot) re-applies the node's config."""
        for pod in self.core.list_namespaced_pod(NAMESPACE, label_selector=f"app={APP_MIG}",
                                                 field_selector=f"spec.nodeName={node}").items:
            ignore_not_found(self.core.delete_namespaced_pod, pod.metadata.name, NAMESPACE)

    def _allocatable_mismatch(self) -> None:
        self._annotate_node("gpu-worker-1", {ANN_LOST: "3"})
        wait_for("gpu-worker-1 to advertise 49 nvidia.com/mig-1g.10gb",
                 lambda: str((self.core.read_node("gpu-worker-1").status.allocatable or {})
                             .get("nvidia.com/mig-1g.10gb")) == "49", SCENARIO_TIMEOUT)

    def _operands_disabled(self) -> None:
        self.core.patch_node("gpu-worker-2", {"metadata": {"labels": {"nvidia.com/gpu.deploy.operands": "false"}}})
        wait_for("nvidia-device-plugin-daemonset to leave gpu-worker-2",
                 lambda: _ds_ready(self.apps, "nvidia-device-plugin-daemonset") == (len(self.p.workers) - 1,) * 2,
                 SCENARIO_TIMEOUT)

    def _gpu_lost(self) -> None:
        def allocatable() -> dict:
            return {k: str(v) for k, v in (self.core.read_node("gpu-worker-1").status.allocatable or {}).items()
                    if k.startswith("nvidia.com/")}
        before = allocatable()
        self._annotate_node("gpu-worker-1", {ANN_LOST: "3"})
        wait_for("gpu-worker-1 to advertise less after losing GPU 3", lambda: allocatable() != before, SCENARIO_TIMEOUT)

    def _vectoradd_failing(self) -> None:
        ns, name = SCENARIO_CONFIGMAP
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"cuda": "fail"}}
        ignore_not_found(self.core.delete_namespaced_config_map, name, ns)
        self.core.create_namespaced_config_map(ns, body)

    def _gpu_worker_notready(self) -> None:
        self._annotate_node("gpu-worker-3", {ANN_SIMULATE: "not-ready"})
        wait_for("gpu-worker-3 to be NotReady", lambda: not _node_ready(self.core, "gpu-worker-3"), SCENARIO_TIMEOUT)

    def _driver_library_mismatch(self) -> None:
        for w in self.p.workers:
            self._annotate_node(w.name, {ANN_DRIVER_LIBRARIES: UPGRADED_LIBRARIES})

    # -- back to healthy --------------------------------------------------------------------
    def reset(self, timeout: float = 180) -> None:
        """Undo every fault (whatever applied it) and wait for the healthy cluster."""
        ns, name = SCENARIO_CONFIGMAP
        ignore_not_found(self.core.delete_namespaced_config_map, name, ns)
        for w in self.p.workers:
            node = self.core.read_node(w.name)
            labels, annotations = node.metadata.labels or {}, node.metadata.annotations or {}
            clear = {k: None for k in NODE_FAULTS if k in annotations}
            relabel = {k: "true" for k, v in labels.items() if k.startswith("nvidia.com/gpu.deploy.") and v == "false"}
            if "nvidia.com/gpu.deploy.operands" in labels:
                relabel["nvidia.com/gpu.deploy.operands"] = None  # the operator puts the state labels back
            if w.mig_config is not None and labels.get("nvidia.com/mig.config") != w.mig_config:
                relabel["nvidia.com/mig.config"] = w.mig_config
            if clear or relabel:
                self.core.patch_node(w.name, {"metadata": {"annotations": clear, "labels": relabel}})
            if labels.get("nvidia.com/mig.config.state") == "failed":
                self._restart_mig_manager(w.name)
        pods = self.core.list_namespaced_pod(self.p.namespace).items
        for pod in pods:
            if ANN_SIMULATE in (pod.metadata.annotations or {}) and not pod.metadata.deletion_timestamp:
                ignore_not_found(self.core.delete_namespaced_pod, pod.metadata.name, self.p.namespace,
                                 grace_period_seconds=0)
        # a MIG change that failed took the node's validation pods away (reconfigure.go deletes
        # them first, restarts the validator only on success): restart it, as an admin would
        validated = {p.spec.node_name for p in pods if (p.metadata.labels or {}).get("app") == "nvidia-cuda-validator"}
        for pod in pods:
            if (pod.metadata.labels or {}).get("app") == APP_VALIDATOR and pod.spec.node_name not in validated:
                ignore_not_found(self.core.delete_namespaced_pod, pod.metadata.name, NAMESPACE)
        self.active.clear()
        self.p.wait_healthy(timeout)
