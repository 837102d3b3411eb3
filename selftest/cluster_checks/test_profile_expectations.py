"""What the profile declares is what is checked: a profile that differs from the cluster
(ClusterPolicy values, by the operator's effective value; validator env, toleration, MIG
assignment, version range, product, number of workers) fails those checks, each naming the value
found and the one expected."""
from __future__ import annotations


def test_profile_differences_fail_by_name(run_cluster, profile_with):
    profile = profile_with({"cluster": {
        "server_version": {"min": "1.29", "max": "1.31"},
        "gpu_operator": {"spec": {"mig.strategy": "single", "driver.enabled": False,
                                  "sandboxDevicePlugin.enabled": True},
                         "validator_driver_env": {"DISABLE_DEV_CHAR_SYMLINK_CREATION": "false"},
                         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]},
        "gpu_workers": {"min_count": 4,
                        "mig_configs": [{"match": ["gpu-worker-1"], "config": "all-balanced"},
                                        {"match": ["gpu-worker-2"], "config": "all-balanced"},
                                        {"match": ["gpu-worker-3"], "config": "all-disabled"}]},
    }})
    proc, results = run_cluster("-k", "test_api or test_gpu_operator or test_gpu_nodes", profile=profile)
    expected = {
        ("cluster.api.version", None): "Kubernetes v1.35.8, expected >= 1.29, <= 1.31",
        ("cluster.nodes.gpu_workers", None): "3 node(s) match nvidia.com/gpu.present=true (gpu-worker-1, gpu-worker-2, gpu-worker-3), expected at least 4",
        ("cluster.operator.spec", "mig.strategy"): "spec.mig.strategy is 'mixed', expected 'single'",
        # the chart leaves it out when false: compared by the operator's default, not as "unset"
        ("cluster.operator.spec", "sandboxDevicePlugin.enabled"):
            "spec.sandboxDevicePlugin.enabled is unset (the operator's default: False), expected True",
        ("cluster.operator.validator_env", "DISABLE_DEV_CHAR_SYMLINK_CREATION"): "is 'true', expected 'false'",
        ("cluster.operator.toleration", "nvidia.com/gpu Exists NoExecute"): "spec.daemonsets.tolerations do not tolerate taint nvidia.com/gpu:NoExecute (nvidia.com/gpu Exists NoExecute)",
        ("cluster.mig.config_label", "gpu-worker-1"): "nvidia.com/mig.config='all-1g.10gb', expected 'all-balanced'",
    }
    for key, text in expected.items():
        assert results[key]["verdict"] == "fail", (key, results[key]["message"])
        assert text in results[key]["message"], (key, results[key]["message"])
    others = {k: r["message"] for k, r in results.items() if k not in expected and r["verdict"] == "fail"}
    assert not others, others
    assert results[("cluster.operator.spec", "driver.enabled")]["verdict"] == "pass"
    assert results[("cluster.operator.spec", "vfioManager.enabled")]["verdict"] == "pass"


def test_unknown_gpu_product_cannot_be_checked(run_cluster, profile_with):
    """A product the MIG catalog does not know: the product label check fails, the allocatable
    check is blocked by it (never a wrong count)."""
    profile = profile_with({"cluster": {"gpu_workers": {"product": "NVIDIA-B300"}}})
    _, results = run_cluster("-k", "test_gpu_nodes", profile=profile)
    labels = results[("cluster.node.gpu_labels", "gpu-worker-1")]
    assert labels["verdict"] == "fail"
    assert labels["message"] == "nvidia.com/gpu.product='NVIDIA-H100-80GB-HBM3' (expected 'NVIDIA-B300')"
    alloc = results[("cluster.mig.allocatable", "gpu-worker-1")]
    assert alloc["verdict"] == "blocked" and alloc["blocked_by"] == "cluster.node.gpu_labels", alloc


def test_a_selector_no_node_matches_skips_the_worker_checks_saying_why(run_cluster, profile_with):
    """A GPU worker selector that matches no node: cluster.nodes.gpu_workers fails, and each check
    of a GPU worker gives one result saying so in the profile's words (never pytest's "empty
    parameter set", never a pass)."""
    profile = profile_with({"cluster": {"gpu_workers": {"selector": "no-such-label=1"}}})
    _, results = run_cluster("-k", "test_api or test_gpu_nodes", profile=profile)
    assert results[("cluster.nodes.gpu_workers", None)]["verdict"] == "fail", results[("cluster.nodes.gpu_workers", None)]
    per_worker = {cid: r for (cid, param), r in results.items() if param == "<no GPU worker>"}
    assert {"cluster.node.gpu_labels", "cluster.mig.allocatable"} <= set(per_worker), sorted(results)
    for cid, r in per_worker.items():
        assert r["verdict"] == "skip", (cid, r)
        assert r["message"] == ("no node matches cluster.gpu_workers.selector no-such-label=1 "
                                "(judged by cluster.nodes.gpu_workers)"), (cid, r["message"])
