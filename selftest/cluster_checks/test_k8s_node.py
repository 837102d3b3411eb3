"""Node checks through Kubernetes (``--hosts=k8s-node://...``), end to end on the bed: the KWOK
workers are backed by testbed/hosts roots (testbed/cluster/hostexec.py runs the probe pod's
command there and serves its log), and the verdicts, messages and evidence are those of the same
roots probed as ``chroot://`` hosts -- on a good worker and on a faulty one."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import yaml

from cluster_harness import FAULTY, GOOD, PROFILE, backed_workers, probe_leftovers, wait_gone
from runner import run_suite
from testbed.hosts import rootfs, scenarios

GPU_SELECTOR = "nvidia.com/gpu.present=true"


@pytest.fixture(scope="module")
def backed(platform):
    """The article's three workers backed by host roots; unbacked again afterwards."""
    with backed_workers(platform) as core:
        yield core


def _node_run(platform, tmp_path: Path, hosts: str, *args: str, profile: Path = PROFILE):
    proc, doc = run_suite("-m", "node", "-q", f"--profile={profile}", f"--kubeconfig={platform.kubeconfig}",
                          f"--hosts={hosts}", *args,
                          report_dir=tmp_path / f"reports-{len(list(tmp_path.glob('reports-*')))}", timeout=300)
    assert doc, f"no JSON report (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-4000:]
    return proc, doc


#: the date column of `ls -l` (busybox: "Dec  1 10:04")
LS_TIME = re.compile(r"\b[A-Z][a-z]{2} +\d{1,2} +\d{2}:\d{2}\b")


def _by_host(doc: dict, label_of: dict[str, str]) -> dict[str, dict]:
    """{scenario: {(check, param): (verdict, message, evidence)}}, host labels put in neutral form."""
    out: dict[str, dict] = {}
    for r in doc["results"]:
        scenario = label_of[r["host"]]
        text = [r["message"], r["evidence"]]
        text = [t.replace(r["host"], "<host>") if t else t for t in text]
        # the two paths read two renderings of one scenario: `ls -l` times may differ by a minute
        text = [LS_TIME.sub("<mtime>", t) if t else t for t in text]
        out.setdefault(scenario, {})[(r["check_id"], r["param"])] = (r["verdict"], *text)
    return out


def test_same_verdicts_and_evidence_as_chroot_on_good_and_faulty_worker(platform, backed, tmp_path):
    roots = {s: rootfs.render(scenarios.build(s), tmp_path / "roots" / s) for s in (GOOD, FAULTY)}
    chroot_proc, chroot_doc = _node_run(platform, tmp_path, ",".join(f"chroot://{r}" for r in roots.values()))
    k8s_proc, k8s_doc = _node_run(platform, tmp_path, "k8s-node://gpu-worker-1,k8s-node://gpu-worker-2")

    assert chroot_proc.returncode == k8s_proc.returncode == 1, k8s_proc.stdout[-3000:]
    via_chroot = _by_host(chroot_doc, {str(r): s for s, r in roots.items()})
    via_k8s = _by_host(k8s_doc, {"gpu-worker-1": GOOD, "gpu-worker-2": FAULTY})
    for scenario in (GOOD, FAULTY):
        assert via_k8s[scenario] == via_chroot[scenario], scenario
    good = {k: v[0] for k, v in via_k8s[GOOD].items()}
    assert set(good.values()) <= {"pass", "skip"} and good[("node.reachable", None)] == "pass", good
    failed = {k[0]: v[1] for k, v in via_k8s[FAULTY].items() if v[0] == "fail"}
    assert list(failed) == ["node.dkms.nvidia_installed"], failed
    assert "nvidia/580.95.05: added" in failed["node.dkms.nvidia_installed"]
    assert "dkms status" in via_k8s[FAULTY][("node.dkms.nvidia_installed", None)][2]  # the probe's evidence
    assert "k8s-node probes: 2 pods" in k8s_proc.stdout
    wait_gone(lambda: probe_leftovers(backed))


def test_label_selector_form_checks_every_gpu_node(platform, backed, tmp_path):
    proc, doc = _node_run(platform, tmp_path, f"k8s-node://?selector={GPU_SELECTOR}", "-k", "reachable or dkms")
    reachable = {r["host"]: r["verdict"] for r in doc["results"] if r["check_id"] == "node.reachable"}
    assert reachable == {"gpu-worker-1": "pass", "gpu-worker-2": "pass", "gpu-worker-3": "pass"}, reachable
    dkms = {r["host"]: r["verdict"] for r in doc["results"] if r["check_id"] == "node.dkms.nvidia_installed"}
    assert dkms == {"gpu-worker-1": "pass", "gpu-worker-2": "fail", "gpu-worker-3": "pass"}, dkms
    assert proc.returncode == 1
    wait_gone(lambda: probe_leftovers(backed))


def test_selector_matching_no_node_is_an_error_not_an_empty_pass(platform, backed, tmp_path):
    proc, doc = _node_run(platform, tmp_path, "k8s-node://?selector=no-such-label=1", "-k", "reachable")
    (result,) = [r for r in doc["results"] if r["check_id"] == "node.reachable"]
    assert result["verdict"] == "error" and "no node matches selector 'no-such-label=1'" in result["message"], result
    assert proc.returncode == 1


@pytest.mark.parametrize("case", ["image-pull-failure", "unschedulable"])
def test_probe_pod_that_never_starts_is_an_error_by_the_deadline(platform, backed, tmp_path, case):
    """An image from a registry that does not resolve (the kubelet's ErrImagePull, as the bed's
    KWOK stage shows it), or a node the scheduler cannot place the pod on: node.reachable is an
    error naming the node and the reason once k8s_node.start_s has passed; the other checks are
    blocked; the pod and its namespace are deleted."""
    start_s = 6
    data = yaml.safe_load(PROFILE.read_text())
    data["k8s_node"] = {"start_s": start_s}
    node, reason = "gpu-worker-1", "waiting ErrImagePull: failed to pull and unpack image \"registry.invalid/busybox:1\""
    if case == "image-pull-failure":
        data["k8s_node"]["image"] = "registry.invalid/busybox:1"
    else:  # a node that is gone (or mistyped): no node satisfies the pod's node affinity
        node, reason = "gpu-worker-9", "PodScheduled=False Unschedulable: 0/6 nodes are available"
    profile = tmp_path / "profile.yaml"
    profile.write_text(yaml.safe_dump(data))
    t0 = time.monotonic()
    proc, doc = _node_run(platform, tmp_path, f"k8s-node://{node}", "-k", "reachable or dkms", profile=profile)
    elapsed = time.monotonic() - t0
    by_check = {r["check_id"]: r for r in doc["results"]}
    reachable = by_check["node.reachable"]
    assert reachable["verdict"] == "error", reachable
    assert f"node {node}: probe pod" in reachable["message"], reachable["message"]
    assert f"did not start within {start_s} s (profile k8s_node.start_s)" in reachable["message"], reachable["message"]
    assert reason in reachable["message"], reachable["message"]
    assert by_check["node.dkms.nvidia_installed"]["verdict"] == "blocked"
    assert proc.returncode == 1
    assert elapsed < start_s + 30, f"took {elapsed:.0f}s"
    wait_gone(lambda: probe_leftovers(backed))


@pytest.mark.parametrize("spec, says", [
    ("k8s-node://", "no node: name one"),
    ("k8s-node://Gpu_Worker", "'Gpu_Worker' is not a Kubernetes node name"),
    ("k8s-node://gpu-worker-1?namespace=x", "a node name takes no ?options"),
    ("k8s-node://?selecter=a=b", "no node: name one"),
])
def test_bad_k8s_node_spec_is_bad_input(tmp_path, spec, says):
    """Needs no cluster: the spec is refused before anything runs (one line, exit 4)."""
    proc, doc = run_suite("-m", "node", f"--hosts={spec}", report_dir=tmp_path / "reports", timeout=120)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert f"ERROR: --hosts {spec}: {says}" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr and doc is None
