"""Waiting and cleaning up, with the only whole-GPU worker cordoned so that the vectoradd pod
stays Pending: the timeout names what was awaited and the last state seen; an image that cannot
be pulled is reported as such ("could not check"); after SIGINT mid-wait the run cleans up and
the sweeper finds nothing left; after SIGKILL the sweeper finds and removes the leftover."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import pytest
from kubernetes import client

from cluster_harness import PROFILE
from gpuconform.cluster.connect import connect
from gpuconform.cluster.sweep import leftovers, sweep
from gpuconform.report import model as results_file
from runner import REPO

WHOLE_GPU_WORKER = "gpu-worker-3"


@pytest.fixture
def cordoned(platform):
    core = client.CoreV1Api(platform.api)
    core.patch_node(WHOLE_GPU_WORKER, {"spec": {"unschedulable": True}})
    yield core
    core.patch_node(WHOLE_GPU_WORKER, {"spec": {"unschedulable": None}})


def _pending_pod(cluster, timeout=60) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods = cluster.get_json("/api/v1/pods", {"labelSelector": "app.kubernetes.io/managed-by=gpuconform"})["items"]
        if pods:
            return pods[0]
        time.sleep(0.3)
    raise AssertionError("the run created no pod")


def test_timeout_names_what_and_last_state(cordoned, run_cluster, profile_with):
    profile = profile_with({"cluster": {"timeouts": {"pod_run_s": 4}}})
    proc, results = run_cluster("-k", "vectoradd_whole_gpu", profile=profile)
    r = results[("cluster.workload.vectoradd_gpu", None)]
    assert r["verdict"] == "fail"
    assert "timed out after 4s waiting for pod gpuconform-" in r["message"]
    # the wait's progress reached the log (stderr is no terminal here: plain lines), through pytest's capture
    ended = [ln for ln in proc.stderr.splitlines() if ln.startswith("gpuconform: waited ")]
    assert any(re.fullmatch(r"gpuconform: waited [45]s for pod gpuconform-\S+/cuda-vectoradd-gpu to complete: "
                            r"timed out: cuda-vectoradd-gpu: Pending; PodScheduled=False Unschedulable.*", ln)
               for ln in ended), proc.stderr[-3000:]
    assert "to complete; last state seen: cuda-vectoradd-gpu: Pending; PodScheduled=False Unschedulable" in r["message"]
    assert "node(s) were unschedulable" in r["message"]


def test_image_pull_reported_as_such(cordoned, platform, profile_with, tmp_path):
    """While the suite waits, the pod reports ImagePullBackOff (as a kubelet would for an
    unreachable registry): the check is an error naming the image and the pull failure."""
    from cluster_harness import by_check
    profile = profile_with({"cluster": {"timeouts": {"image_pull_s": 2, "pod_run_s": 60},
                                        "workloads": {"image": "registry.invalid/cuda-sample:vectoradd"}}})
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "cluster", "-k", "vectoradd_whole_gpu",
           f"--profile={profile}", f"--kubeconfig={platform.kubeconfig}", f"--report-dir={tmp_path / 'r'}"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    cluster = connect(str(platform.kubeconfig))
    pod = _pending_pod(cluster)
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    client.CoreV1Api(platform.api).patch_namespaced_pod_status(name, ns, {"status": {"containerStatuses": [{
        "name": "cuda-vectoradd", "image": "registry.invalid/cuda-sample:vectoradd", "imageID": "", "ready": False,
        "restartCount": 0, "state": {"waiting": {"reason": "ImagePullBackOff",
                                                 "message": 'Back-off pulling image "registry.invalid/cuda-sample:vectoradd"'}}}]}})
    out, _ = proc.communicate(timeout=120)
    doc = results_file.read(sorted((tmp_path / "r").glob("*.json"))[-1].read_text())
    r = by_check(doc)[("cluster.workload.vectoradd_gpu", None)]
    assert r["verdict"] == "error", (r, out[-2000:])
    assert r["message"].startswith("could not check: image registry.invalid/cuda-sample:vectoradd not pulled within 2s: "
                                   "ImagePullBackOff: Back-off pulling image"), r["message"]


def _start_and_interrupt(platform, tmp_path, sig) -> tuple[subprocess.Popen, dict]:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "cluster", "-k", "vectoradd_whole_gpu",
           f"--profile={PROFILE}", f"--kubeconfig={platform.kubeconfig}", f"--report-dir={tmp_path / 'r'}"]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    pod = _pending_pod(connect(str(platform.kubeconfig)))
    time.sleep(0.5)  # mid-wait
    os.kill(proc.pid, sig)
    proc.communicate(timeout=60)
    return proc, pod


def test_sigint_mid_wait_cleans_up(cordoned, platform, tmp_path):
    proc, pod = _start_and_interrupt(platform, tmp_path, signal.SIGINT)
    cluster = connect(str(platform.kubeconfig))
    namespaces, _ = leftovers(cluster)
    assert all(n["status"]["phase"] == "Terminating" for n in namespaces), namespaces  # cleanup ran
    lines: list[str] = []
    assert sweep(cluster, wait_s=60, out=lines.append) == 0, lines
    assert leftovers(cluster) == ([], [])


def test_sigkill_leftover_swept(cordoned, platform, tmp_path):
    proc, pod = _start_and_interrupt(platform, tmp_path, signal.SIGKILL)
    cluster = connect(str(platform.kubeconfig))
    namespaces, _ = leftovers(cluster)
    assert [n["metadata"]["name"] for n in namespaces] == [pod["metadata"]["namespace"]]
    assert namespaces[0]["status"]["phase"] == "Active"  # nothing could clean up after SIGKILL
    out = subprocess.run([sys.executable, "-m", "gpuconform.cluster.sweep", f"--kubeconfig={platform.kubeconfig}",
                          "--wait=60"], cwd=REPO, capture_output=True, text=True, timeout=90)
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"deleted namespace {pod['metadata']['namespace']}" in out.stdout
    assert out.stdout.strip().endswith("all leftovers gone")
    assert leftovers(cluster) == ([], [])
