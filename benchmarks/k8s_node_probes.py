"""Benchmark (a script, not a test): node checks through Kubernetes (``k8s-node://``) for up to
1,000 KWOK GPU workers, each backed by a simulated host root. Prints, per size, the wall time of
the suite run and its API requests -- counted by the suite's own client and by the API server
(``apiserver_request_total`` from its ``/metrics``, every client's requests: the scheduler's
bindings, kwok's status updates, the bed's log serving) -- and how they grow with the size.

    .venv/bin/python benchmarks/k8s_node_probes.py [--sizes 100,300,1000] [--full-at 100]

Setup (not measured): a fresh control plane (testbed/cluster), max(sizes) H100x8 GPU workers as
the GPU Operator publishes them, every tenth one backed by the faulty ``dkms-added`` root and the
others by ``gpu-good`` (testbed/hosts scenarios), labelled ``gpuconform-bench/n<size>=yes`` for
each size they belong to. The node agent is paused (it plays the device plugins, which do not run
here). Measured: ``pytest -m node tests/node/test_reachable.py
--hosts=k8s-node://?selector=gpuconform-bench/n<size>=yes`` (the probe is what costs; every
other node check reads the same facts), and with ``--full-at N`` the whole node layer at N.

The bed runs every node's probe on this one machine (testbed/cluster/hostexec.py, 2 at a time on
2 cores: ~0.4 s of CPU each), where a real cluster runs them on the nodes at once: the wall time
here is bounded by that, not by the API traffic; the profile's deadlines are raised accordingly.
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
sys.path.insert(0, str(REPO / "benchmarks"))

import yaml  # noqa: E402

from cluster_1000_nodes import pids, request_total  # noqa: E402  (the API server's own count)
from testbed.cluster.controlplane import ControlPlane  # noqa: E402
from testbed.cluster.hostexec import ANN_HOST_ROOT  # noqa: E402
from testbed.cluster.nodes import GpuWorker, published_node  # noqa: E402
from testbed.kube import client_for  # noqa: E402
from testbed.waiting import wait_for  # noqa: E402

PAUSED = ("nodeagent",)
OWN = re.compile(r"k8s-node probes: (\d+) pods in namespace \S+ \(deleted\), (\d+) API requests")


def node_body(i: int, sizes: list[int]) -> dict:
    node = published_node(GpuWorker(f"gpu-{i:04d}", "all-disabled"))
    node["metadata"]["annotations"][ANN_HOST_ROOT] = "dkms-added" if i % 10 == 9 else "gpu-good"
    node["metadata"]["labels"].update({f"gpuconform-bench/n{s}": "yes" for s in sizes if i < s})
    return node


def measure(api, kubeconfig: Path, work: Path, size: int, tests: str) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "node", tests,
           f"--profile={work / 'profile.yaml'}", f"--kubeconfig={kubeconfig}", f"--report-dir={work / str(size)}",
           f"--hosts=k8s-node://?selector=gpuconform-bench/n{size}=yes"]
    before = request_total(api)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=3600)
    wall = time.monotonic() - t0
    server = request_total(api) - before
    own = OWN.search(proc.stdout)
    summary = [line for line in proc.stdout.splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
    return {"size": size, "wall": wall, "server": server, "pods": int(own.group(1)) if own else None,
            "own": int(own.group(2)) + 1 if own else None,  # +1: the selector's node list (at configure)
            "summary": summary[-1].strip() if summary else proc.stdout[-500:] + proc.stderr[-500:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,300,1000", help="comma-separated node counts (default %(default)s)")
    parser.add_argument("--full-at", type=int, default=100, help="also run the whole node layer at this size (0: no)")
    parser.add_argument("--state", type=Path, default=REPO / ".state" / "bench-k8s-node")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    n = sizes[-1]

    t0 = time.monotonic()
    cp = ControlPlane(args.state, attached=True).start()
    paused = pids(args.state, PAUSED)
    for pid in paused:
        os.kill(pid, signal.SIGSTOP)
    try:
        api = client_for(cp.kubeconfig)
        api.configuration.connection_pool_maxsize = 16
        from kubernetes import client
        core = client.CoreV1Api(api)
        with ThreadPoolExecutor(16) as pool:
            list(pool.map(core.create_node, [node_body(i, sizes) for i in range(n)]))
        wait_for(f"{n} nodes Ready", lambda: sum(
            1 for x in core.list_node(_preload_content=False).json()["items"]
            for c in x["status"].get("conditions", []) if c["type"] == "Ready" and c["status"] == "True") >= n,
            900, interval=2)
        print(f"setup: control plane + {n} GPU nodes Ready in {time.monotonic() - t0:.0f}s", flush=True)

        profile = yaml.safe_load((REPO / "profiles" / "seed-h100.yaml").read_text())
        profile["name"] = "bench-k8s-node"
        # the bed runs every node's probe on this machine, one after the other (see the docstring)
        profile["timeouts"]["probe_s"] = 1800
        profile["k8s_node"] = {"start_s": 900}
        work = Path(tempfile.mkdtemp(prefix="gpuconform-bench-k8s-node-"))
        (work / "profile.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))

        rows = [measure(api, cp.kubeconfig, work, size, "tests/node/test_reachable.py") for size in sizes]
        full = measure(api, cp.kubeconfig, work, args.full_at, "tests/node") if args.full_at else None
    finally:
        for pid in paused:
            os.kill(pid, signal.SIGCONT)
        cp.stop()

    print("node.reachable through probe pods (one pod per node):")
    print(f"{'nodes':>6} {'wall s':>8} {'s/node':>7} {'suite requests':>15} {'req/node':>8} {'API server requests':>20}  result")
    for r in rows:
        print(f"{r['size']:>6} {r['wall']:>8.1f} {r['wall'] / r['size']:>7.3f} {r['own'] or '?':>15} "
              f"{(r['own'] or 0) / r['size']:>8.2f} {r['server']:>20.0f}  {r['summary']}")
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"growth {a['size']} -> {b['size']} nodes (x{b['size'] / a['size']:g}): wall x{b['wall'] / a['wall']:.1f}, "
              f"suite requests x{(b['own'] or 0) / max(1, a['own'] or 1):.1f}, "
              f"API server requests x{b['server'] / max(1, a['server']):.1f}")
    if full:
        print(f"whole node layer at {full['size']} nodes: {full['wall']:.1f} s wall, {full['own']} suite requests, "
              f"{full['server']:.0f} API server requests  {full['summary']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
