"""Opt-in MIG reconfiguration against the bed's MIG manager, which follows NVIDIA's order
(mig-parted reconfigure.go): relabel, pending -> success, and only then the restarted device
plugin republishes allocatable; the check waits for it and goes back. A MIG manager that fails
(a process holds a GPU) makes the check fail with the state it reached, and the original config
is put back."""
from __future__ import annotations

import pytest
from kubernetes import client

from gpuconform.cluster.namespace import RESTORE_MIG_CONFIG
from testbed.cluster.nodeagent import ANN_IN_USE


def _node(platform, name="gpu-worker-1"):
    return client.CoreV1Api(platform.api).read_node(name)


@pytest.fixture
def profile(profile_with):
    return profile_with({"cluster": {"timeouts": {"mig_reconfigure_s": 60}}})


def test_reconfigure_round_trip_passes(platform, run_cluster, profile):
    proc, results = run_cluster("-m", "cluster and disruptive", profile=profile)
    r = results[("cluster.mig.reconfigure", None)]
    assert r["verdict"] == "pass", r["message"]
    assert "all-balanced: states success -> pending -> success" in r["evidence"]
    assert "all-1g.10gb: states success -> pending -> success" in r["evidence"]
    assert "'nvidia.com/mig-3g.40gb': 8" in r["evidence"]
    node = _node(platform)
    assert node.metadata.labels["nvidia.com/mig.config"] == "all-1g.10gb"
    assert RESTORE_MIG_CONFIG not in (node.metadata.annotations or {})
    assert node.status.allocatable["nvidia.com/mig-1g.10gb"] == "56"


def test_failing_mig_manager_fails_the_check(platform, run_cluster, profile):
    core = client.CoreV1Api(platform.api)
    core.patch_node("gpu-worker-1", {"metadata": {"annotations": {ANN_IN_USE: "pid 4242 holds /dev/nvidia0"}}})
    try:
        proc, results = run_cluster("-m", "cluster and disruptive", profile=profile)
        r = results[("cluster.mig.reconfigure", None)]
        assert r["verdict"] == "fail"
        assert r["message"].startswith("gpu-worker-1: mig.config.state went to failed for all-balanced")
        assert "success -> pending -> failed" in r["message"]
        node = _node(platform)
        assert node.metadata.labels["nvidia.com/mig.config"] == "all-1g.10gb"  # put back by the cleanup
        assert RESTORE_MIG_CONFIG not in (node.metadata.annotations or {})
    finally:
        core.patch_node("gpu-worker-1", {"metadata": {"annotations": {ANN_IN_USE: None}}})
        platform.reset()
