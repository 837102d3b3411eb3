"""On the healthy simulated cluster every cluster check passes (Kyverno: skipped, not
installed), the disruptive check stays out of a default run, the evidence keeps the pod logs,
and nothing is left behind."""
from __future__ import annotations

import time

import pytest

from cluster_harness import PROFILE, by_check
from gpuconform.cluster.connect import connect
from gpuconform.cluster.sweep import leftovers
from runner import run_suite

MIG_RESOURCES = ("nvidia.com/mig-1g.10gb", "nvidia.com/mig-2g.20gb", "nvidia.com/mig-3g.40gb")
GPU_WORKERS = ("gpu-worker-1", "gpu-worker-2", "gpu-worker-3")


@pytest.fixture(scope="module")
def good_run(platform, tmp_path_factory):
    proc, doc = run_suite("-m", "cluster", "-q", f"--profile={PROFILE}", f"--kubeconfig={platform.kubeconfig}",
                          report_dir=tmp_path_factory.mktemp("good"), timeout=300)
    assert doc, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, by_check(doc)


def test_every_check_passes(good_run):
    _, results = good_run
    bad = {k: (r["verdict"], r["message"]) for k, r in results.items()
           if r["verdict"] != "pass" and k[0] != "cluster.kyverno.namespace_excluded"}
    assert not bad, bad
    assert results[("cluster.kyverno.namespace_excluded", "gpu-operator")]["verdict"] == "skip"
    message = results[("cluster.kyverno.namespace_excluded", "gpu-operator")]["message"]
    assert "Kyverno is not installed" in message and "cluster.kyverno.required: false" in message, message


def test_one_result_per_worker_and_mig_profile(good_run):
    _, results = good_run
    for node in GPU_WORKERS:
        for check_id in ("cluster.node.gpu_labels", "cluster.mig.config_label", "cluster.mig.config_state",
                         "cluster.mig.allocatable"):
            assert (check_id, node) in results
    for res in MIG_RESOURCES:
        for check_id in ("cluster.mig.vectoradd", "cluster.mig.pod_limits", "cluster.mig.placement",
                         "cluster.mig.one_device", "cluster.mig.exhaustion"):
            assert (check_id, res) in results, (check_id, res)


def test_disruptive_check_not_in_default_run(good_run):
    _, results = good_run
    assert not [k for k in results if k[0] == "cluster.mig.reconfigure"]


def test_evidence_keeps_logs_and_events(good_run):
    _, results = good_run
    gpu = results[("cluster.workload.vectoradd_gpu", None)]["evidence"]
    assert "Test PASSED" in gpu and "GPU 0: NVIDIA H100 80GB HBM3" in gpu and "Scheduled" in gpu
    mig = results[("cluster.mig.one_device", "nvidia.com/mig-2g.20gb")]["evidence"]
    assert "MIG 2g.20gb" in mig
    exhaustion = results[("cluster.mig.exhaustion", "nvidia.com/mig-1g.10gb")]["evidence"]
    assert "Insufficient nvidia.com/mig-1g.10gb" in exhaustion and "asked 73" in exhaustion


def test_nothing_left_after_a_normal_run(good_run, platform):
    cluster = connect(str(platform.kubeconfig))
    deadline = time.monotonic() + 60
    while (left := leftovers(cluster)) != ([], []) and time.monotonic() < deadline:
        time.sleep(1)
    assert left == ([], []), [n["metadata"]["name"] for n in left[0]]


def test_run_namespace_enforces_restricted_pod_security(platform):
    """The manifests' pods are admitted under Pod Security "restricted" (the good run), and the
    run namespace does enforce it: the same pod without its security settings is refused."""
    from gpuconform.cluster.errors import ClusterError
    from gpuconform.cluster.namespace import Cleanup, ensure
    from gpuconform.cluster.workloads import Images, render
    cluster = connect(str(platform.kubeconfig))
    cleanup = Cleanup()
    try:
        ns = ensure(cluster, cleanup, 60)
        assert ns.name.startswith("gpuconform-")
        body = render("cuda-vectoradd.yaml", "privileged-probe", ns, Images("busybox"), limits={"nvidia.com/gpu": 1})
        del body["spec"]["securityContext"]
        del body["spec"]["containers"][0]["securityContext"]
        with pytest.raises(ClusterError, match='violates PodSecurity "restricted:latest"'):
            cluster.request("POST", f"/api/v1/namespaces/{ns.name}/pods", body=body)
    finally:
        assert cleanup.run() == []
