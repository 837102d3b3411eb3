"""Benchmark (a script, not a test): create N KWOK H100x8 GPU nodes on a fresh control plane,
wait until kwok reports them all Ready, list them, print the times.

    .venv/bin/python testbed/cluster/bench_nodes.py [--nodes 1000] [--workers 16]
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[2])  # the repo root, not this folder

from kubernetes import client  # noqa: E402

from testbed.cluster.controlplane import REPO, ControlPlane  # noqa: E402
from testbed.cluster.nodes import GpuWorker, published_node  # noqa: E402
from testbed.kube import client_for  # noqa: E402
from testbed.waiting import wait_for  # noqa: E402

CONFIGS = ("all-1g.10gb", "all-balanced", "all-disabled")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=16, help="parallel create requests")
    parser.add_argument("--state", type=Path, default=REPO / ".state" / "bench-cluster")
    args = parser.parse_args()

    t0 = time.monotonic()
    cp = ControlPlane(args.state, attached=True).start()
    t_start = time.monotonic() - t0
    try:
        api = client_for(cp.kubeconfig)
        api.configuration.connection_pool_maxsize = args.workers
        core = client.CoreV1Api(api)
        nodes = [published_node(GpuWorker(f"bench-gpu-{i:04d}", CONFIGS[i % 3])) for i in range(args.nodes)]

        t1 = time.monotonic()
        with ThreadPoolExecutor(args.workers) as pool:
            list(pool.map(core.create_node, nodes))
        t_create = time.monotonic() - t1

        def all_ready() -> bool:
            items = core.list_node(label_selector="nvidia.com/gpu.present=true").items
            ready = sum(1 for n in items for c in (n.status.conditions or []) if c.type == "Ready" and c.status == "True")
            return ready == args.nodes

        t2 = time.monotonic()
        wait_for(f"{args.nodes} nodes Ready", all_ready, 600, interval=2)
        t_ready = time.monotonic() - t2

        t3 = time.monotonic()
        listed = core.list_node(label_selector="nvidia.com/gpu.present=true").items
        t_list = time.monotonic() - t3
        t4 = time.monotonic()
        raw = core.list_node(_preload_content=False).data
        t_list_raw = time.monotonic() - t4
        assert len(listed) == args.nodes, len(listed)
        print(f"control plane start:           {t_start:6.1f} s")
        print(f"create {args.nodes} GPU nodes ({args.workers} parallel): {t_create:6.1f} s "
              f"({args.nodes / t_create:.0f} nodes/s)")
        print(f"until all {args.nodes} Ready (kwok):  {t_ready:6.1f} s")
        print(f"list {len(listed)} nodes (typed client): {t_list:6.2f} s")
        print(f"list {len(listed)} nodes (raw JSON, {len(raw) / 1e6:.1f} MB): {t_list_raw:6.2f} s")
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
