"""Benchmark (a script, not a test): the non-workload cluster checks against 1,000 KWOK GPU
workers on a real API server. Prints the wall time of the suite run and the number of API
requests it made, read from the API server's own ``/metrics`` (``apiserver_request_total``).

    .venv/bin/python benchmarks/cluster_1000_nodes.py [--nodes 1000] [--no-operands]

Setup (not measured): a fresh control plane (testbed/cluster), N H100x8 GPU workers with the
three MIG layouts in turn (kwok makes them Ready), then the other clients of the API server
(controller-manager, scheduler, kwok, device simulator, node agent) are paused (SIGSTOP) so
that the request count is the suite's alone; the GPU Operator's chart is installed and NVIDIA's
controller creates its DaemonSets, then it is paused too and the rest is written as a healthy
install looks through the API: DaemonSet status N of N available, ClusterPolicy ready, and per
worker the nvidia-operator-validator pod Ready and the cuda validator pod Succeeded (2N pods,
from NVIDIA's manifests). (Letting the DaemonSet controller start 6N operand pods on a 2-core
machine takes the better part of an hour; the checks read the same objects either way.)
Goal: <= 50 requests, <= 30 s.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import yaml  # noqa: E402

from benchmarks.suite_env import NOTE, suite_env  # noqa: E402
from testbed.cluster.controlplane import ControlPlane  # noqa: E402
from testbed.cluster.nodes import GpuWorker, published_node  # noqa: E402
from testbed.cluster.platform import Platform  # noqa: E402
from testbed.kube import client_for  # noqa: E402
from testbed.waiting import wait_for  # noqa: E402

LAYOUTS = (("1g", "all-1g.10gb"), ("bal", "all-balanced"), ("dis", "all-disabled"))
PAUSED = ("kube-controller-manager", "kube-scheduler", "kwok", "devicesim", "nodeagent", "hostexec")
#: paused from the start: the node agent plays device plugins, which do not run here (the nodes are
#: created as published, with what their plugins would advertise; it would zero it)
PAUSED_AT_START = ("nodeagent",)
METRIC = re.compile(r'^apiserver_request_total\{([^}]*)\} (\d+(?:\.\d+)?(?:e\+\d+)?)$', re.M)


def request_total(api) -> float:
    """All requests the API server has counted so far (every verb, resource and code)."""
    resp = api.call_api(*api.param_serialize("GET", "/metrics", auth_settings=["BearerToken"]))
    return sum(float(value) for _labels, value in METRIC.findall(resp.read().decode()))


def pids(state: Path, names) -> list[int]:
    out = []
    for name in names:
        f = state / "pids" / f"{name}.pid"
        if f.exists():
            out.append(int(f.read_text().split()[0]))
    return out


def healthy_operator(cp: ControlPlane, platform: Platform, core, workers, state: Path) -> list[int]:
    """The GPU Operator as a healthy install shows it, at N nodes on 2 cores: the chart is
    installed and NVIDIA's controller creates its DaemonSets (the DaemonSet controller is paused
    first: 6N operand pods would take the better part of an hour), then the controller is paused
    too and the DaemonSets' status, the ClusterPolicy's status and the validator pods (from
    NVIDIA's own manifests) are written as N healthy workers show them. Returns the paused pids."""
    from kubernetes import client
    from testbed.cluster.nodeagent import APP_VALIDATOR, WORKLOADS
    from testbed.cluster.platform import NAMESPACE
    from testbed.gpuoperator import binaries
    paused = pids(state, PAUSED)
    for pid in paused:
        os.kill(pid, signal.SIGSTOP)
    cp.start_gpu_operator(platform.install_operator())
    apps = client.AppsV1Api(platform.api)
    # NVIDIA's controller walks every node before it deploys its operands, one Update per node whose
    # labels it changes, at its client's rate limit (gpu-operator controllers/state_manager.go:
    # init -> labelGPUNodes), then steps through every state (DaemonSets, the mig-parted
    # ConfigMap...) and only at the end of that pass writes ClusterPolicy status.state
    # (controllers/clusterpolicy_controller.go: Reconcile -> updateCRState): a count of DaemonSets
    # could catch it halfway (3,000 nodes: no mig-manager yet). The time grows with N.
    def pass_done() -> str | None:
        status = platform.cluster_policy().get("status") or {}
        failed = [c for c in status.get("conditions") or [] if c.get("reason") == "ReconcileFailed"]
        if failed:  # not yet: it retries; the wait reports this if it stays so
            raise RuntimeError(f"NVIDIA's controller failed a state: {failed[0].get('message')}")
        return status.get("state")
    wait_for("NVIDIA's controller to finish a pass over its states (ClusterPolicy status.state)", pass_done,
             max(300, 0.4 * len(workers)), interval=2)
    paused += pids(state, ("gpu-operator",))
    os.kill(paused[-1], signal.SIGSTOP)
    n = len(workers)
    for ds in apps.list_namespaced_daemon_set(NAMESPACE).items:
        apps.patch_namespaced_daemon_set_status(ds.metadata.name, NAMESPACE, {"status": {
            "desiredNumberScheduled": n, "currentNumberScheduled": n, "numberReady": n, "numberAvailable": n,
            "updatedNumberScheduled": n, "numberMisscheduled": 0, "observedGeneration": ds.metadata.generation}})
    platform.custom.patch_cluster_custom_object_status("nvidia.com", "v1", "clusterpolicies", "cluster-policy",
                                                       {"status": {"state": "ready", "namespace": NAMESPACE}})
    now = "2026-01-01T00:00:00Z"
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}
    template = apps.read_namespaced_daemon_set(APP_VALIDATOR, NAMESPACE, _preload_content=False).json()
    validator = {"metadata": {"labels": {"app": APP_VALIDATOR}}, "spec": template["spec"]["template"]["spec"]}
    cuda = yaml.safe_load((binaries.module_dir() / "validator" / WORKLOADS["cuda"][1]).read_text())

    def one(worker):
        for name, body, status in ((f"{APP_VALIDATOR}-{worker.name}", validator, ready),
                                   (f"nvidia-cuda-validator-{worker.name}", cuda, {"phase": "Succeeded"})):
            pod = {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": name, "namespace": NAMESPACE, "labels": body["metadata"]["labels"]},
                   "spec": {**body["spec"], "nodeName": worker.name}}
            created = core.create_namespaced_pod(NAMESPACE, pod, _preload_content=False).json()
            core.patch_namespaced_pod_status(created["metadata"]["name"], NAMESPACE, {"status": status},
                                             _preload_content=False)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, workers))
    return paused


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--no-operands", action="store_true", help="no GPU Operator objects (nodes only)")
    parser.add_argument("--state", type=Path, default=REPO / ".state" / "bench-cluster-checks")
    parser.add_argument("--pytest-args", default="", help="more pytest arguments for the measured run")
    parser.add_argument("--keep", action="store_true",
                        help="keep the control plane up, its controllers still paused, after the run until Ctrl-C "
                             "(to run or profile the suite again by hand on the same cluster)")
    args = parser.parse_args()
    n = args.nodes

    t0 = time.monotonic()
    cp = ControlPlane(args.state, attached=True).start()
    for pid in pids(args.state, PAUSED_AT_START):
        os.kill(pid, signal.SIGSTOP)
    try:
        api = client_for(cp.kubeconfig)
        api.configuration.connection_pool_maxsize = 16
        workers = [GpuWorker(f"gpu-{tag}-{i:04d}", cfg) for i in range(n) for tag, cfg in [LAYOUTS[i % 3]]]
        platform = Platform(api, workers, control_plane=())
        from kubernetes import client
        core = client.CoreV1Api(api)
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(core.create_node, [published_node(w) for w in workers]))
        print(f"setup: control plane + {n} GPU nodes created in {time.monotonic() - t0:.0f}s", flush=True)
        wait_for(f"{n} nodes Ready", lambda: sum(
            1 for x in core.list_node(_preload_content=False).json()["items"]
            for c in x["status"].get("conditions", []) if c["type"] == "Ready" and c["status"] == "True") >= n,
            600, interval=2)
        if args.no_operands:
            paused = pids(args.state, PAUSED)
            for pid in paused:
                os.kill(pid, signal.SIGSTOP)
        else:
            paused = healthy_operator(cp, platform, core, workers, args.state)
            print(f"setup: GPU Operator objects of a healthy install written after {time.monotonic() - t0:.0f}s", flush=True)

        profile = yaml.safe_load((REPO / "profiles" / "seed-h100.yaml").read_text())
        profile["name"] = f"bench-{n}-nodes"
        profile["cluster"]["gpu_workers"]["min_count"] = n
        profile["cluster"]["gpu_workers"]["mig_configs"] = [
            {"match": [f"gpu-{tag}-*"], "config": cfg} for tag, cfg in LAYOUTS]
        work = Path(tempfile.mkdtemp(prefix="gpuconform-bench-"))
        (work / "profile.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "cluster and not disruptive",
               "-k", "not test_workloads", f"--profile={work / 'profile.yaml'}", f"--kubeconfig={cp.kubeconfig}",
               f"--report-dir={work}", *args.pytest_args.split()]

        try:
            probe = request_total(api)
            before = request_total(api)
            own_read = before - probe  # 1 if the server counts a /metrics read, else 0
            t1 = time.monotonic()
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, env=suite_env())
            wall = time.monotonic() - t1
            after = request_total(api)
            requests = after - before - own_read  # the suite's requests alone (controllers paused)
            summary = [line for line in proc.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
            own = re.search(r"cluster layer sent (\d+) API requests", proc.stdout)
            print(f"suite run (non-workload cluster checks, {n} GPU workers, {NOTE}): {wall:.1f} s wall "
                  f"[{summary[-1].strip() if summary else proc.stdout[-300:]}]")
            print(f"API requests counted by the API server (apiserver_request_total): {requests:.0f}"
                  + (f"; counted by the suite's client: {own.group(1)}" if own else ""))
            print(f"report: {sorted(work.glob('*.json'))[-1] if list(work.glob('*.json')) else 'none'}")
            print(f"goal: <= 50 requests, <= 30 s -> {'met' if requests <= 50 and wall <= 30 else 'NOT met'}")
            if args.keep:  # the controllers stay paused: the cluster stays as measured
                print(f"kept up: {' '.join(cmd[1:])}; Ctrl-C stops it", flush=True)
                try:
                    signal.pause()
                except KeyboardInterrupt:
                    pass
        finally:
            for pid in paused:
                os.kill(pid, signal.SIGCONT)
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
