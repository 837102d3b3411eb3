"""Each fault scenario of the simulated cluster makes its check fail with a message naming the
cause -- in the real GPU Operator's own words where it reports the fault -- and, within the
checks run, nothing else fails that the fault does not explain."""
from __future__ import annotations

import pytest

BLOCKED_BY_POLICY = "blocked by cluster.operator.clusterpolicy_ready"

#: scenario -> (-k selection, {(check_id, param): (verdict, [text the message must hold])})
POLICY_NOT_READY = ("cluster.operator.clusterpolicy_ready", None)

#: scenario -> (-k selection, {(check_id, param): (verdict, [text the message must hold])})
CASES = {
    "clusterpolicy-notready": ("test_gpu_operator or test_workloads", {
        POLICY_NOT_READY: ("fail", ["state is 'notReady'", "states not ready: [state-device-plugin]"]),
        ("cluster.operator.operand", "nvidia-device-plugin-daemonset"): (
            "fail", ["2 of 3 available", "gpu-worker-2", "CrashLoopBackOff"]),
        ("cluster.workload.vectoradd_gpu", None): ("blocked", [BLOCKED_BY_POLICY]),
        ("cluster.mig.vectoradd", "nvidia.com/mig-1g.10gb"): ("blocked", [BLOCKED_BY_POLICY]),
        ("cluster.mig.exhaustion", "nvidia.com/mig-1g.10gb"): ("blocked", [BLOCKED_BY_POLICY]),
        ("cluster.workload.isolation", None): ("blocked", [BLOCKED_BY_POLICY]),
    }),
    "operand-daemonset-short": ("test_gpu_operator", {
        ("cluster.operator.operand", "nvidia-dcgm-exporter"): (
            "fail", ["2 of 3 available", "gpu-worker-2", "CrashLoopBackOff"]),
        POLICY_NOT_READY: ("fail", ["states not ready: [state-dcgm-exporter]"]),
    }),
    "operand-daemonset-unscheduled": ("test_gpu_operator", {
        ("cluster.operator.operand", "nvidia-device-plugin-daemonset"): (
            "fail", ["gpu-worker-2: label nvidia.com/gpu.deploy.device-plugin=false (wants true)"]),
    }),
    # the operator's own words for the cause ("Operands are disabled for node"), on every operand
    "operands-disabled": ("test_gpu_operator", {
        **{("cluster.operator.operand", ds): (
            "fail", ["gpu-worker-2: label nvidia.com/gpu.deploy.operands=false", "Operands are disabled for node"])
           for ds in ("nvidia-device-plugin-daemonset", "gpu-feature-discovery", "nvidia-container-toolkit-daemonset",
                      "nvidia-dcgm-exporter", "nvidia-mig-manager", "nvidia-operator-validator")},
        ("cluster.operator.validation", None): ("fail", ["gpu-worker-2: no nvidia-operator-validator pod"]),
    }),
    "validator-failing": ("test_gpu_operator", {
        ("cluster.operator.validation", None): (
            "fail", ["gpu-worker-1", "driver-validation waiting RunContainerError", "last insn is not an exit or jmp"]),
        ("cluster.operator.operand", "nvidia-operator-validator"): ("fail", ["gpu-worker-1", "RunContainerError"]),
        POLICY_NOT_READY: ("fail", ["states not ready: [state-operator-validation]"]),
    }),
    "mig-config-failed": ("test_gpu_nodes", {
        ("cluster.mig.config_state", "gpu-worker-2"): ("fail", ["nvidia.com/mig.config.state='failed'", "all-balanced"]),
        ("cluster.mig.allocatable", "gpu-worker-2"): ("blocked", ["blocked by cluster.mig.config_state"]),
    }),
    "allocatable-mismatch": ("test_gpu_nodes", {
        ("cluster.mig.allocatable", "gpu-worker-1"): (
            "fail", ["mig-parted config all-1g.10gb (ConfigMap gpu-operator/default-mig-parted-config)",
                     "nvidia.com/mig-1g.10gb 49 (expected 56)"]),
    }),
    "vectoradd-failing": ("test_workloads", {
        ("cluster.workload.vectoradd_gpu", None): ("fail", ["ended Failed", "Failed to allocate device vector A"]),
        **{("cluster.mig.vectoradd", r): ("fail", ["ended Failed", "busy or unavailable"])
           for r in ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb")},
    }),
    "gpu-worker-notready": ("test_gpu_nodes or test_api", {
        ("cluster.nodes.ready", None): ("fail", ["gpu-worker-3: Ready=False (KubeletNotReady"]),
    }),
}


@pytest.mark.parametrize("scenario", sorted(CASES))
def test_fault_fails_its_check(scenario, fault, run_cluster):
    selection, expected = CASES[scenario]
    fault(scenario)
    proc, results = run_cluster("-k", selection)
    for key, (verdict, texts) in expected.items():
        got = results.get(key)
        assert got is not None, f"{key} not reported; have {sorted(results)}"
        assert got["verdict"] == verdict, f"{key}: {got['verdict']}: {got['message']}"
        for text in texts:
            assert text in got["message"], f"{key}: {text!r} not in {got['message']!r}"
    failing = {k[0] for k, (v, _) in expected.items() if v == "fail"}
    others = {k: (r["verdict"], r["message"]) for k, r in results.items()
              if k not in expected and r["verdict"] not in ("pass", "skip")
              and not (r["verdict"] == "blocked" and r.get("blocked_by") in failing)}
    assert not others, f"{scenario} also broke: {others}"
    assert proc.returncode == 1


def test_vectoradd_failure_keeps_evidence_and_namespace(fault, run_cluster, platform):
    """--keep-on-failure keeps the run's namespace with the failed pod; the sweeper removes it."""
    from gpuconform.cluster.connect import connect
    from gpuconform.cluster.sweep import leftovers, sweep
    fault("vectoradd-failing")
    proc, results = run_cluster("-k", "vectoradd_whole_gpu", "--keep-on-failure")
    r = results[("cluster.workload.vectoradd_gpu", None)]
    assert "Failed to allocate device vector A" in r["evidence"] and "Scheduled" in r["evidence"]
    assert "kept namespace gpuconform-" in proc.stdout
    cluster = connect(str(platform.kubeconfig))
    lines: list[str] = []
    try:
        namespaces = [n for n in leftovers(cluster)[0] if n["status"]["phase"] == "Active"]
        assert len(namespaces) == 1, namespaces
        pods = cluster.get_json(f"/api/v1/namespaces/{namespaces[0]['metadata']['name']}/pods")["items"]
        assert [p["status"]["phase"] for p in pods] == ["Failed"]
    finally:
        rc = sweep(cluster, wait_s=60, out=lines.append)
    assert rc == 0, lines
    assert any(line.startswith("deleted namespace gpuconform-") for line in lines), lines
    assert lines[-1] == "all leftovers gone", lines


def test_gpu_visible_without_request_fails_isolation(platform, run_cluster):
    """The bed's runtime shows every GPU to a pod that asked for none (scenario ConfigMap
    ``isolation: leak``, as with NVIDIA_VISIBLE_DEVICES=all and nvidia the default runtime)."""
    from kubernetes import client

    from testbed.cluster.devices import SCENARIO_CONFIGMAP
    ns, name = SCENARIO_CONFIGMAP
    client.CoreV1Api(platform.api).create_namespaced_config_map(
        ns, {"metadata": {"name": name}, "data": {"isolation": "leak"}})
    try:
        _, results = run_cluster("-k", "no_gpu_without_request")
    finally:
        platform.reset()
    r = results[("cluster.workload.isolation", None)]
    assert r["verdict"] == "fail", r
    assert r["message"].startswith("a pod without GPU request on gpu-worker-1 sees: /dev/nvidia0, /dev/nvidia1,"), r["message"]
    assert "NVIDIA H100 80GB HBM3" in r["message"]
