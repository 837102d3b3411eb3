"""Opt-in MIG reconfiguration against the bed's MIG manager: relabel, pending -> success,
allocatable follows the catalog, and back; a MIG manager that fails makes the check fail with
the state it reached, and the original config is put back."""
from __future__ import annotations

import pytest
from kubernetes import client

from gpuconform.cluster.namespace import RESTORE_MIG_CONFIG
from testbed.cluster.waiting import wait_for

ANN_FAIL = "testbed.gpuconform.io/simulate-mig"


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
    core.patch_node("gpu-worker-1", {"metadata": {"annotations": {ANN_FAIL: "fail"}}})
    try:
        proc, results = run_cluster("-m", "cluster and disruptive", profile=profile)
        r = results[("cluster.mig.reconfigure", None)]
        assert r["verdict"] == "fail"
        assert r["message"].startswith("gpu-worker-1: mig.config.state went to failed for all-balanced")
        assert "success -> pending -> failed" in r["message"]
        node = _node(platform)
        assert node.metadata.labels["nvidia.com/mig.config"] == "all-1g.10gb"  # put back by the cleanup
        assert RESTORE_MIG_CONFIG not in (node.metadata.annotations or {})
    finally:  # let the MIG manager finish its (failing) restore before the bed is reset
        wait_for("the MIG manager to give up the restore",
                 lambda: b"gpu-worker-1: all-1g.10gb failed" in platform.migmanager_log.read_bytes(), 30)
        core.patch_node("gpu-worker-1", {"metadata": {"annotations": {ANN_FAIL: None}}})
        platform.reset()
