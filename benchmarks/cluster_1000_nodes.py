"""Benchmark (a script, not a test): the non-workload cluster checks against 1,000 KWOK GPU
workers on a real API server. Prints the wall time of the suite run and the number of API
requests it made, read from the API server's own ``/metrics`` (``apiserver_request_total``).

    .venv/bin/python benchmarks/cluster_1000_nodes.py [--nodes 1000] [--no-operands]

Setup (not measured): a fresh control plane (testbed/cluster), N H100x8 GPU workers with the
three MIG layouts in turn (kwok makes them Ready), then the other clients of the API server
(controller-manager, scheduler, kwok, device simulator) are paused (SIGSTOP) so that the
request count is the suite's alone, and the GPU Operator of the article is written as a healthy
one looks through the API: namespace, ClusterPolicy ready, operand DaemonSets whose status says
N of N available, and per worker the nvidia-operator-validator pod Ready and the cuda /
device-plugin validator pods Succeeded (3N pods). (Letting the DaemonSet controller start 6N
operand pods on a 2-core machine takes the better part of an hour; the checks read the same
objects either way.) Goal: <= 50 requests, <= 30 s.
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

from testbed.cluster.controlplane import ControlPlane  # noqa: E402
from testbed.cluster.kube import client_for  # noqa: E402
from testbed.cluster.platform import GpuWorker, Platform, gpu_worker_node  # noqa: E402
from testbed.cluster.waiting import wait_for  # noqa: E402

LAYOUTS = (("1g", "all-1g.10gb"), ("bal", "all-balanced"), ("dis", "all-disabled"))
PAUSED = ("kube-controller-manager", "kube-scheduler", "kwok", "devicesim", "migmanager")
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


def healthy_operator(platform: Platform, core, workers) -> None:
    """The GPU Operator's objects as a healthy install shows them (controllers paused)."""
    from kubernetes import client
    from testbed.cluster.platform import NAMESPACE, OPERANDS, validator_workload_pod
    apps = client.AppsV1Api(platform.api)
    platform.ensure_validator_pods = lambda: None  # written below, in parallel
    platform.create_operator()
    n = len(workers)
    for name in OPERANDS:
        gen = apps.read_namespaced_daemon_set(name, NAMESPACE).metadata.generation
        apps.patch_namespaced_daemon_set_status(name, NAMESPACE, {"status": {
            "desiredNumberScheduled": n, "currentNumberScheduled": n, "numberReady": n, "numberAvailable": n,
            "updatedNumberScheduled": n, "numberMisscheduled": 0, "observedGeneration": gen}})
    now = "2026-01-01T00:00:00Z"
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}
    done = {"phase": "Succeeded"}

    def one(worker):
        validator = validator_workload_pod("cuda", worker)
        validator["metadata"]["name"] = f"nvidia-operator-validator-{worker.name}"
        validator["metadata"]["labels"]["app"] = "nvidia-operator-validator"
        cuda, plugin = validator_workload_pod("cuda", worker), validator_workload_pod("device-plugin", worker)
        cuda["metadata"]["name"] = f"nvidia-cuda-validator-{worker.name}"  # unique at any N
        plugin["metadata"]["name"] = f"nvidia-device-plugin-validator-{worker.name}"
        for body, status in ((validator, ready), (cuda, done), (plugin, done)):
            pod = core.create_namespaced_pod(NAMESPACE, body, _preload_content=False).json()
            core.patch_namespaced_pod_status(pod["metadata"]["name"], NAMESPACE, {"status": status},
                                             _preload_content=False)

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, workers))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--no-operands", action="store_true", help="no GPU Operator objects (nodes only)")
    parser.add_argument("--state", type=Path, default=REPO / ".state" / "bench-cluster-checks")
    parser.add_argument("--pytest-args", default="", help="more pytest arguments for the measured run")
    parser.add_argument("--keep", action="store_true",
                        help="keep the control plane up after the run until Ctrl-C (to run the suite again by hand)")
    args = parser.parse_args()
    n = args.nodes

    t0 = time.monotonic()
    cp = ControlPlane(args.state, attached=True).start()
    try:
        api = client_for(cp.kubeconfig)
        api.configuration.connection_pool_maxsize = 16
        workers = [GpuWorker(f"gpu-{tag}-{i:04d}", cfg) for i in range(n) for tag, cfg in [LAYOUTS[i % 3]]]
        platform = Platform(api, workers, control_plane=())
        from kubernetes import client
        core = client.CoreV1Api(api)
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(core.create_node, [gpu_worker_node(w) for w in workers]))
        print(f"setup: control plane + {n} GPU nodes created in {time.monotonic() - t0:.0f}s", flush=True)
        wait_for(f"{n} nodes Ready", lambda: sum(
            1 for x in core.list_node(_preload_content=False).json()["items"]
            for c in x["status"].get("conditions", []) if c["type"] == "Ready" and c["status"] == "True") >= n,
            600, interval=2)
        paused = pids(args.state, PAUSED)
        for pid in paused:
            os.kill(pid, signal.SIGSTOP)
        if not args.no_operands:
            healthy_operator(platform, core, workers)
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
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
            wall = time.monotonic() - t1
            after = request_total(api)
        finally:
            for pid in paused:
                os.kill(pid, signal.SIGCONT)
        requests = after - before - own_read  # the suite's requests alone (controllers paused)
        summary = [line for line in proc.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
        own = re.search(r"cluster layer sent (\d+) API requests", proc.stdout)
        print(f"suite run (non-workload cluster checks, {n} GPU workers): {wall:.1f} s wall "
              f"[{summary[-1].strip() if summary else proc.stdout[-300:]}]")
        print(f"API requests counted by the API server (apiserver_request_total): {requests:.0f}"
              + (f"; counted by the suite's client: {own.group(1)}" if own else ""))
        print(f"report: {sorted(work.glob('*.json'))[-1] if list(work.glob('*.json')) else 'none'}")
        print(f"goal: <= 50 requests, <= 30 s -> {'met' if requests <= 50 and wall <= 30 else 'NOT met'}")
        if args.keep:
            print(f"kept up: --kubeconfig={cp.kubeconfig} --profile={work / 'profile.yaml'}; Ctrl-C stops it", flush=True)
            try:
                signal.pause()
            except KeyboardInterrupt:
                pass
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
