"""Benchmark (a script, not a test): the non-workload cluster checks against 1,000 KWOK GPU
workers on a real API server. Prints the wall time of the suite run and the number of API
requests it made, read from the API server's own ``/metrics`` (``apiserver_request_total``).

    .venv/bin/python benchmarks/cluster_1000_nodes.py [--nodes 1000] [--no-operands]

Setup (not measured): a fresh control plane (testbed/cluster), N H100x8 GPU workers with the
three MIG layouts in turn, the GPU Operator objects of the article with their DaemonSets
running on every worker (N pods each) and the validator pods. During the measured run the
other clients of the API server (controller-manager, scheduler, kwok, device simulator) are
paused (SIGSTOP), so that the request count is the suite's alone. Goal: <= 50 requests, <= 30 s.
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
PAUSED = ("kube-controller-manager", "kube-scheduler", "kwok", "devicesim")
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--no-operands", action="store_true", help="no GPU Operator objects (nodes only)")
    parser.add_argument("--state", type=Path, default=REPO / ".state" / "bench-cluster-checks")
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
        if not args.no_operands:
            platform.create_operator()
            wait_for(f"the GPU Operator on {n} workers", lambda: not platform.health_problems(), 1800, interval=5)
            print(f"setup: GPU Operator healthy on {n} workers after {time.monotonic() - t0:.0f}s", flush=True)
        else:
            wait_for(f"{n} nodes Ready", lambda: len([x for x in core.list_node().items if x.status.conditions]) >= n,
                     600, interval=2)

        profile = yaml.safe_load((REPO / "profiles" / "seed-h100.yaml").read_text())
        profile["name"] = f"bench-{n}-nodes"
        profile["cluster"]["gpu_workers"]["min_count"] = n
        profile["cluster"]["gpu_workers"]["mig_configs"] = [
            {"match": [f"gpu-{tag}-*"], "config": cfg} for tag, cfg in LAYOUTS]
        work = Path(tempfile.mkdtemp(prefix="gpuconform-bench-"))
        (work / "profile.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
        cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "cluster and not disruptive",
               "-k", "not test_workloads", f"--profile={work / 'profile.yaml'}", f"--kubeconfig={cp.kubeconfig}",
               f"--report-dir={work}"]

        paused = pids(args.state, PAUSED)
        for pid in paused:
            os.kill(pid, signal.SIGSTOP)
        try:
            before = request_total(api)
            t1 = time.monotonic()
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
            wall = time.monotonic() - t1
            after = request_total(api)
        finally:
            for pid in paused:
                os.kill(pid, signal.SIGCONT)
        requests = after - before - 1  # the first /metrics read itself is counted in `after`
        summary = [line for line in proc.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
        own = re.search(r"cluster layer sent (\d+) API requests", proc.stdout)
        print(f"suite run (non-workload cluster checks, {n} GPU workers): {wall:.1f} s wall "
              f"[{summary[-1].strip() if summary else proc.stdout[-300:]}]")
        print(f"API requests counted by the API server (apiserver_request_total): {requests:.0f}"
              + (f"; counted by the suite's client: {own.group(1)}" if own else ""))
        print(f"report: {sorted(work.glob('*.json'))[-1] if list(work.glob('*.json')) else 'none'}")
        print(f"goal: <= 50 requests, <= 30 s -> {'met' if requests <= 50 and wall <= 30 else 'NOT met'}")
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
