"""Each fault scenario shows through the API exactly as the cluster checks will see it -- made
where it arises (a node, its hardware, the admin's labels) and carried by the real controllers:
the GPU Operator itself turns a crash-looping operand into ClusterPolicy ``notReady``."""
from __future__ import annotations

import pytest
from kubernetes import client

from testbed.cluster.devices import ANN_DRIVER_LIBRARIES

from testbed.cluster.platform import NAMESPACE


def _node(core, name):
    return core.read_node(name)


def _ready(node) -> str:
    return next(c.status for c in node.status.conditions if c.type == "Ready")


def _ds(bed, name):
    st = client.AppsV1Api(bed.api).read_namespaced_daemon_set(name, NAMESPACE).status
    return st.number_ready, st.desired_number_scheduled


def _validator_init_waiting(bed):
    core = client.CoreV1Api(bed.api)
    pods = core.list_namespaced_pod(NAMESPACE, label_selector="app=nvidia-operator-validator",
                                    field_selector="spec.nodeName=gpu-worker-1").items
    return [s.state.waiting.message for p in pods for s in (p.status.init_container_statuses or [])
            if s.state.waiting and s.state.waiting.reason == "RunContainerError"]


EXPECTED = {
    "clusterpolicy-notready": lambda bed, core: client.CustomObjectsApi(bed.api).get_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "cluster-policy")["status"]["state"] == "notReady",
    "operand-daemonset-short": lambda bed, core: _ds(bed, "nvidia-dcgm-exporter") == (2, 3),
    "operand-daemonset-unscheduled": lambda bed, core: _ds(bed, "nvidia-device-plugin-daemonset") == (2, 2),
    "validator-failing": lambda bed, core: any("last insn is not an exit or jmp" in m
                                               for m in _validator_init_waiting(bed)),
    "mig-config-failed": lambda bed, core: _node(core, "gpu-worker-2").metadata.labels[
        "nvidia.com/mig.config.state"] == "failed",
    "allocatable-mismatch": lambda bed, core: _node(core, "gpu-worker-1").status.allocatable[
        "nvidia.com/mig-1g.10gb"] == "49",
    "vectoradd-failing": lambda bed, core: core.read_namespaced_config_map(
        "gpuconform-testbed-scenario", "kube-system").data == {"cuda": "fail"},
    "gpu-worker-notready": lambda bed, core: _ready(_node(core, "gpu-worker-3")) == "False",
    "gpu-lost": lambda bed, core: _node(core, "gpu-worker-1").status.allocatable["nvidia.com/mig-1g.10gb"] == "49",
    # the real operator removed the node's deploy labels: no operand is scheduled there
    "operands-disabled": lambda bed, core: "nvidia.com/gpu.deploy.device-plugin" not in _node(
        core, "gpu-worker-2").metadata.labels and _ds(bed, "nvidia-device-plugin-daemonset") == (2, 2),
    # every worker's driver libraries upgraded under a loaded module (what its pods' nvidia-smi then
    # says: selftest/cluster_checks/test_aiconformance.py)
    "driver-library-mismatch": lambda bed, core: all(
        (_node(core, w.name).metadata.annotations or {}).get(ANN_DRIVER_LIBRARIES) for w in bed.platform.workers),
}


def test_every_scenario_is_proven(cluster_bed):
    assert sorted(EXPECTED) == cluster_bed.scenario_names


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_scenario_shows_and_resets(name, cluster_bed, core_v1):
    cluster_bed.apply_scenario(name)
    try:
        assert EXPECTED[name](cluster_bed, core_v1), f"scenario {name} not visible"
    finally:
        cluster_bed.reset()
    assert cluster_bed.platform.health_problems() == []
