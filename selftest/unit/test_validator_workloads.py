"""cluster.operator.validation expects a validator workload pod only where the validation runs one
(WITH_WORKLOAD). Proven on NVIDIA's own validator DaemonSet asset, where plugin-validation has
WITH_WORKLOAD=false (since v25.3.3) and cuda-validation leaves it to the validator's default (true)."""
from __future__ import annotations

import copy

import pytest

from gpuconform.cluster import operator

NODES = ["gpu-worker-1", "gpu-worker-2"]
VALIDATOR_DS = "state-operator-validation/0500_daemonset.yaml"


def _pod(app: str, node: str, *, ready=False, phase="Running") -> dict:
    return {"metadata": {"name": f"{app}-{node}", "labels": {"app": app}}, "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": str(ready)}]}}


def _healthy_pods(*apps_succeeded: str) -> list[dict]:
    pods = [_pod("nvidia-operator-validator", n, ready=True) for n in NODES]
    return pods + [_pod(app, n, phase="Succeeded") for app in apps_succeeded for n in NODES]


@pytest.fixture
def validator_ds(upstream_asset) -> dict:
    return copy.deepcopy(upstream_asset(VALIDATOR_DS))


def _plugin_env(ds: dict) -> list[dict]:
    init = ds["spec"]["template"]["spec"]["initContainers"]
    return next(c for c in init if c["name"] == "plugin-validation")["env"]


def test_real_validator_daemonset_runs_only_the_cuda_workload(validator_ds, render_cluster_policy):
    workloads = operator.validation_workloads(validator_ds, render_cluster_policy()["spec"])
    assert [(w.app, w.expected) for w in workloads] == [
        ("nvidia-cuda-validator", True), ("nvidia-device-plugin-validator", False)]
    assert [str(w) for w in workloads] == [
        "cuda-validation: WITH_WORKLOAD unset (the validator's default: true) -> nvidia-cuda-validator pod expected",
        "plugin-validation: WITH_WORKLOAD='false' (DaemonSet) -> nvidia-device-plugin-validator pod not expected"]


def test_healthy_cluster_without_plugin_validator_pod_passes(validator_ds, render_cluster_policy):
    """The old rule (all three pods) failed a healthy cluster; following WITH_WORKLOAD it passes."""
    pods = _healthy_pods("nvidia-cuda-validator")
    workloads = operator.validation_workloads(validator_ds, render_cluster_policy()["spec"])
    assert operator.validator_problems(pods, NODES, workloads) == []
    every_pod = [operator.ValidationWorkload(c, a, True, "old rule") for c, a in operator.WORKLOAD_VALIDATORS.items()]
    assert operator.validator_problems(pods, NODES, every_pod) == [
        f"{n}: no nvidia-device-plugin-validator pod" for n in NODES]


def test_plugin_workload_asked_in_clusterpolicy_and_missing_fails(validator_ds, render_cluster_policy):
    """spec.validator.plugin.env WITH_WORKLOAD=true (Helm validator.plugin.env) overrides the asset."""
    spec = render_cluster_policy(validator={"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "true"}]}})["spec"]
    workloads = operator.validation_workloads(validator_ds, spec)
    assert str(workloads[1]) == ("plugin-validation: WITH_WORKLOAD='true' (ClusterPolicy spec.validator.plugin.env) "
                                 "-> nvidia-device-plugin-validator pod expected")
    assert operator.validator_problems(_healthy_pods("nvidia-cuda-validator"), NODES, workloads) == [
        f"{n}: no nvidia-device-plugin-validator pod" for n in NODES]
    assert operator.validator_problems(_healthy_pods("nvidia-cuda-validator", "nvidia-device-plugin-validator"),
                                       NODES, workloads) == []


def test_plugin_workload_in_daemonset_and_failed_pod_fails(validator_ds):
    next(e for e in _plugin_env(validator_ds) if e["name"] == "WITH_WORKLOAD")["value"] = "1"
    workloads = operator.validation_workloads(validator_ds, {})
    pods = _healthy_pods("nvidia-cuda-validator") + [_pod("nvidia-device-plugin-validator", n, phase="Failed")
                                                     for n in NODES]
    problems = operator.validator_problems(pods, NODES, workloads)
    assert [p.split(":")[0] for p in problems] == NODES and all("Failed" in p for p in problems), problems


def test_no_plugin_validation_container_means_no_pod(validator_ds):
    """The operator drops plugin-validation when the device plugin is disabled."""
    init = validator_ds["spec"]["template"]["spec"]["initContainers"]
    init[:] = [c for c in init if c["name"] != "plugin-validation"]
    assert [w.expected for w in operator.validation_workloads(validator_ds, {})] == [True, False]


def test_with_workload_not_a_boolean_is_named(validator_ds):
    next(e for e in _plugin_env(validator_ds) if e["name"] == "WITH_WORKLOAD")["value"] = "yes"
    workloads = operator.validation_workloads(validator_ds, {})
    assert operator.validator_problems(_healthy_pods("nvidia-cuda-validator"), NODES, workloads) == [
        "plugin-validation: WITH_WORKLOAD='yes' (DaemonSet) is no boolean"]


def test_cuda_validator_not_succeeded_fails(validator_ds):
    workloads = operator.validation_workloads(validator_ds, {})
    pods = _healthy_pods()
    assert operator.validator_problems(pods, NODES, workloads) == [f"{n}: no nvidia-cuda-validator pod" for n in NODES]


def test_evidence_counts_the_pods_and_the_failure_names_each_bad_one(validator_ds):
    """A fleet's validator pods are counted in the evidence, not listed; each one not done is
    still named in the failure."""
    workloads = operator.validation_workloads(validator_ds, {})
    pods = _healthy_pods("nvidia-cuda-validator")
    pods[-1] = _pod("nvidia-cuda-validator", NODES[-1], phase="Failed")
    summary = operator.validator_summary(pods, NODES, workloads)
    n = len(NODES)
    assert summary.splitlines() == [f"nvidia-operator-validator: {n} pods on {n} of {n} GPU workers, {n} Ready",
                                    f"nvidia-cuda-validator: {n} pods on {n} of {n} GPU workers, {n - 1} Succeeded"]
    problems = operator.validator_problems(pods, NODES, workloads)
    assert len(problems) == 1 and problems[0].startswith(f"{NODES[-1]}: nvidia-cuda-validator") and "Failed" in problems[0]
