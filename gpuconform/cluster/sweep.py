"""``python -m gpuconform.cluster.sweep``: remove what interrupted runs left on the cluster.

Finds, by label, every namespace a run created (``app.kubernetes.io/managed-by=gpuconform``,
optionally one ``--run``) and deletes it with everything in it; puts back the
``nvidia.com/mig.config`` of any node the disruptive check relabelled (annotation
``gpuconform.io/restore-mig-config``). Prints one line per leftover; exit 0 when the cluster is
clean afterwards (with ``--wait``: namespaces gone), 1 otherwise, 2 when the API server cannot
be used.
"""
from __future__ import annotations

import argparse
import sys

from gpuconform.cluster import migconfig
from gpuconform.cluster.connect import connect
from gpuconform.cluster.errors import ClusterError
from gpuconform.cluster.namespace import MANAGED_BY, RESTORE_MIG_CONFIG, RUN_LABEL
from gpuconform.cluster.waiting import WaitTimeout, wait_for


def selector(run_id: str | None) -> str:
    parts = [f"{k}={v}" for k, v in MANAGED_BY.items()]
    if run_id:
        parts.append(f"{RUN_LABEL}={run_id}")
    return ",".join(parts)


def leftovers(cluster, run_id: str | None = None) -> tuple[list[dict], list[dict]]:
    """(namespaces of runs, nodes with a mig.config to restore)."""
    ns = cluster.get_json("/api/v1/namespaces", {"labelSelector": selector(run_id)}, what="listing run namespaces")
    nodes = cluster.list_items("/api/v1/nodes", what="listing nodes")
    relabelled = [n for n in nodes if RESTORE_MIG_CONFIG in (n["metadata"].get("annotations") or {})]
    return ns.get("items", []), relabelled


def sweep(cluster, run_id: str | None = None, *, dry_run: bool = False, wait_s: float = 0,
          out=print) -> int:
    namespaces, relabelled = leftovers(cluster, run_id)
    for ns in namespaces:
        name, phase = ns["metadata"]["name"], (ns.get("status") or {}).get("phase")
        run = (ns["metadata"].get("labels") or {}).get(RUN_LABEL, "?")
        if phase == "Terminating":
            out(f"namespace {name} (run {run}) is already terminating")
            continue
        if dry_run:
            out(f"would delete namespace {name} (run {run}, {phase})")
            continue
        cluster.request("DELETE", f"/api/v1/namespaces/{name}", body={"propagationPolicy": "Background"},
                        what=f"deleting namespace {name}", missing_ok=True)
        out(f"deleted namespace {name} (run {run}, was {phase})")
    for node in relabelled:
        name = node["metadata"]["name"]
        original = node["metadata"]["annotations"][RESTORE_MIG_CONFIG]
        if dry_run:
            out(f"would restore {name} nvidia.com/mig.config={original}")
            continue
        migconfig.restore(cluster, name)
        out(f"restored {name} nvidia.com/mig.config={original}")
    if not namespaces and not relabelled:
        out("nothing to sweep")
        return 0
    if dry_run:
        return 1
    if not wait_s:
        return 0
    left: list[dict] = namespaces

    def gone() -> bool:
        left[:] = leftovers(cluster, run_id)[0]
        return not left

    try:
        wait_for("run namespaces to be gone", gone, timeout=wait_s, interval=1,
                 describe=lambda: f"{len(left)} left: {', '.join(n['metadata']['name'] for n in left)}")
    except WaitTimeout:
        out(f"still terminating after {wait_s:.0f}s: {', '.join(n['metadata']['name'] for n in left)}")
        return 1
    out("all leftovers gone")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpuconform.cluster.sweep",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", help="kubeconfig (default: $KUBECONFIG, in-cluster, ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context")
    parser.add_argument("--run", help="only this run id (label gpuconform.io/run)")
    parser.add_argument("--dry-run", action="store_true", help="list the leftovers, change nothing")
    parser.add_argument("--wait", type=float, default=0, metavar="SECONDS",
                        help="wait until the namespaces are gone (default: do not wait)")
    parser.add_argument("--timeout", type=float, default=15, help="API timeout in seconds (default 15)")
    args = parser.parse_args(argv)
    try:
        cluster = connect(args.kubeconfig, args.context, timeout=args.timeout)
        return sweep(cluster, args.run, dry_run=args.dry_run, wait_s=args.wait)
    except ClusterError as exc:
        print(f"sweep: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
