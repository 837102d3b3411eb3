"""Every site of the platform matrix: healthy -> ACCEPTED (exit 0), a lost GPU -> REJECTED by
cluster.mig.allocatable naming the site's own counts."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from cluster_harness import by_check
from runner import REPO, run_suite

pytestmark = pytest.mark.slow

#: site -> (profile, allocatable of gpu-worker-1 when healthy, after GPU 3 is lost): H100 all-1g.10gb
#: is 7 MIG devices a GPU (mixed: nvidia.com/mig-1g.10gb, single: nvidia.com/gpu); whole GPUs
#: count once, time-sliced GPUs 4 times; L40S workers have 4 GPUs.
SITES = {
    "mig-mixed": ("seed-h100.yaml", "nvidia.com/mig-1g.10gb 49 (expected 56)"),
    "mig-single": ("site-mig-single.yaml", "nvidia.com/gpu 49 (expected 56)"),
    "no-mig": ("site-no-mig.yaml", "nvidia.com/gpu 7 (expected 8)"),
    "time-slicing": ("site-time-slicing.yaml", "nvidia.com/gpu 28 (expected 32)"),
    "no-mig-manager": ("site-no-mig-manager.yaml", "nvidia.com/gpu 7 (expected 8)"),
    "l40s": ("site-l40s.yaml", "nvidia.com/gpu 3 (expected 4)"),
    "device-plugin": ("site-device-plugin.yaml", "nvidia.com/gpu 7 (expected 8)"),
}
STATE = REPO / ".state" / "selftest-matrix" / str(os.getpid())


@pytest.fixture(scope="module", params=sorted(SITES))
def site(request):
    """The site's platform on a control plane of its own, stopped after its tests."""
    from testbed.cluster.bed import TestBed
    from testbed.cluster.sites import SITES as BEDS
    bed = TestBed(STATE / request.param, attached=True, site=BEDS[request.param])
    bed.start()
    try:
        yield request.param, bed
    finally:
        bed.stop()


def _run(bed, profile: str, report_dir: Path, *args: str):
    proc, doc = run_suite("-m", "cluster", "-q", f"--profile={REPO / 'profiles' / profile}",
                          f"--kubeconfig={bed.kubeconfig}", *args, report_dir=report_dir, timeout=400)
    assert doc, f"no JSON report (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-4000:]
    return proc, by_check(doc)


def test_healthy_site_is_accepted(site, tmp_path):
    name, bed = site
    proc, results = _run(bed, SITES[name][0], tmp_path)
    bad = {k: (r["verdict"], r["message"]) for k, r in results.items() if r["verdict"] not in ("pass", "skip")}
    assert not bad, f"{name}: {bad}"
    assert proc.returncode == 0, proc.stdout[-3000:]
    for key, r in results.items():
        if r["verdict"] == "skip":
            assert r["message"] and "empty parameter set" not in r["message"], (key, r["message"])
    assert results[("cluster.mig.allocatable", "gpu-worker-1")]["verdict"] == "pass"
    assert results[("cluster.workload.vectoradd_gpu", None)]["verdict"] in ("pass", "skip")


def test_lost_gpu_is_rejected_by_allocatable(site, tmp_path):
    name, bed = site
    bed.apply_scenario("gpu-lost")
    try:
        proc, results = _run(bed, SITES[name][0], tmp_path, "-k", "test_gpu_nodes")
    finally:
        bed.reset()
    r = results[("cluster.mig.allocatable", "gpu-worker-1")]
    assert r["verdict"] == "fail" and SITES[name][1] in r["message"], (name, r["verdict"], r["message"])
    others = {k: (v["verdict"], v["message"]) for k, v in results.items()
              if k != ("cluster.mig.allocatable", "gpu-worker-1") and v["verdict"] not in ("pass", "skip")}
    assert not others, f"{name}: the lost GPU also broke {others}"
    assert proc.returncode == 1


@pytest.mark.parametrize("site", ["mig-single"], indirect=True)
def test_a_profiles_mig_resources_missing_block_the_mig_checks(site, tmp_path):
    """The article's profile (mixed strategy: nvidia.com/mig-* resources) on a site that offers its
    MIG devices as nvidia.com/gpu (single strategy): the profile declares MIG resources the
    platform lacks, so cluster.node.sharing fails and every MIG check is blocked by it, never
    skipped for the cluster's shape (issue #26)."""
    name, bed = site
    proc, results = _run(bed, "seed-h100.yaml", tmp_path, "-k", "test_gpu_nodes or test_workloads")
    assert results[("cluster.node.sharing", "gpu-worker-1")]["verdict"] == "fail"
    mig_checks = {k: r for k, r in results.items() if k[1] == "<no MIG resource offered>"}
    assert mig_checks, sorted(results)
    for key, r in mig_checks.items():
        assert r["verdict"] == "blocked" and "blocked by cluster.node.sharing" in r["message"], (key, r)
        assert "runs sharing 'mig-single'" in r["message"], (key, r["message"])
    assert proc.returncode == 1
#: site -> verdict of aiconf.gpu_sharing (advertised, usable): MIG and time-slicing share GPUs,
#: whole GPUs without MIG or replicas do not
SHARING = {"mig-mixed": "pass", "time-slicing": "pass", "no-mig": "fail"}


@pytest.mark.parametrize("site", sorted(SHARING), indirect=True)
def test_gpu_sharing_follows_the_site(site, tmp_path):
    name, bed = site
    _, results = _run(bed, SITES[name][0], tmp_path, "-m", "aiconformance", "-k", "gpu_sharing")
    got = {param: (r["verdict"], r["message"]) for (cid, param), r in results.items() if cid == "aiconf.gpu_sharing"}
    assert {p: v for p, (v, _) in got.items()} == {"advertised": SHARING[name], "usable": SHARING[name]}, (name, got)
    if SHARING[name] == "fail":
        assert "no GPU worker offers MIG devices or GPU replicas" in got["advertised"][1], got
