"""Change a node's MIG layout the way an operator does -- relabel ``nvidia.com/mig.config`` --
and follow NVIDIA's MIG manager through ``nvidia.com/mig.config.state`` (pending -> success or
failed), wait for allocatable to follow, then put the original back. The original value is
also written on the node (annotation ``gpuconform.io/restore-mig-config``) so that the sweeper
can restore it after an interrupted run."""
from __future__ import annotations

import dataclasses
import time
from typing import Callable

from gpuconform.cluster import nodes
from gpuconform.cluster.connect import Cluster
from gpuconform.cluster.namespace import RESTORE_MIG_CONFIG, Cleanup
from gpuconform.cluster.waiting import Stop, WaitTimeout, watch_one


@dataclasses.dataclass
class Step:
    config: str
    states: list[str]
    allocatable: dict[str, int]
    problem: str | None = None


def _patch(cluster: Cluster, node: str, config: str, restore: str | None) -> dict:
    body = {"metadata": {"labels": {nodes.LABEL_MIG_CONFIG: config},
                         "annotations": {RESTORE_MIG_CONFIG: restore}}}
    return cluster.patch(f"/api/v1/nodes/{node}", body, what=f"relabelling {node}")


def restore(cluster: Cluster, node: str) -> str | None:
    """Put back the mig.config recorded in the node's restore annotation; returns it (or None)."""
    obj = cluster.get_json(f"/api/v1/nodes/{node}", missing_ok=True)
    original = (((obj or {}).get("metadata") or {}).get("annotations") or {}).get(RESTORE_MIG_CONFIG)
    if original:
        _patch(cluster, node, original, None)
    return original


def apply(cluster: Cluster, node: str, config: str, *, restore_to: str | None, timeout: float,
          expected_allocatable: Callable[[str], dict[str, int]]) -> Step:
    """Relabel, watch the state go pending -> success, then keep watching until allocatable is
    what the cluster's mig-parted config gives (all within ``timeout``)."""
    deadline = time.monotonic() + timeout
    want = expected_allocatable(config)  # before relabelling: a config that cannot be told changes nothing
    written = _patch(cluster, node, config, restore_to)
    states: list[str] = [nodes.labels(written).get(nodes.LABEL_MIG_STATE, "<unset>")]

    def applied(obj: dict | None):
        state = _still_ours(obj, node, config)
        if not states or states[-1] != state:
            states.append(state)
        if "pending" in states and state == "success":
            return obj
        if "pending" in states and state == "failed":
            raise Stop(f"mig.config.state went to failed for {config}")
        return None

    describe = lambda obj: (f"mig.config={nodes.labels(obj).get(nodes.LABEL_MIG_CONFIG)} "  # noqa: E731
                            f"mig.config.state={nodes.labels(obj).get(nodes.LABEL_MIG_STATE)}; states seen "
                            f"{' -> '.join(states) or 'none'}") if obj else "node gone"
    try:
        obj = watch_one(cluster, f"{node} {nodes.LABEL_MIG_STATE}=success after relabel to {config}",
                        "/api/v1/nodes", name=node, timeout=timeout, condition=applied,
                        describe=describe, since=written)
    except Stop as exc:
        return Step(config, states, {}, f"{exc} (states seen {' -> '.join(states)})")
    except WaitTimeout as exc:
        return Step(config, states, {}, str(exc))
    got, problem = converged_allocatable(cluster, node, config, obj, want, deadline - time.monotonic())
    return Step(config, states, got, problem)


def _still_ours(obj: dict | None, node: str, config: str) -> str:
    """The node's mig.config.state; Stop when the node is gone or carries another config."""
    if obj is None:
        raise Stop(f"node {node} disappeared")
    lab = nodes.labels(obj)
    if lab.get(nodes.LABEL_MIG_CONFIG) != config:
        raise Stop(f"someone else relabelled {node} to {lab.get(nodes.LABEL_MIG_CONFIG)}")
    return lab.get(nodes.LABEL_MIG_STATE, "<unset>")


def converged_allocatable(cluster: Cluster, node: str, config: str, success: dict, want: dict[str, int],
                          timeout: float) -> tuple[dict[str, int], str | None]:
    """(last allocatable seen, problem or None): after ``success`` (the node as it was when
    mig.config.state=success appeared), watch until its allocatable equals ``want``. NVIDIA's
    MIG manager sets success right after re-enabling the device plugin's deploy label, without
    waiting for it: the plugin pod starts and republishes allocatable seconds later
    (NVIDIA/mig-parted pkg/mig/reconfigure/reconfigure.go, Run)."""
    seen = [nodes.gpu_allocatable(success)]
    if seen[-1] == want:
        return seen[-1], None

    def converged(obj: dict | None):
        if _still_ours(obj, node, config) == "failed":
            raise Stop(f"mig.config.state went to failed for {config} after success")
        seen.append(nodes.gpu_allocatable(obj))
        return obj if seen[-1] == want else None

    try:
        watch_one(cluster, f"{node} allocatable of {config} after {nodes.LABEL_MIG_STATE}=success",
                  "/api/v1/nodes", name=node, timeout=max(timeout, 0.001), condition=converged,
                  describe=lambda obj: f"allocatable {seen[-1] or 'none'}, expected {want}", since=success)
    except Stop as exc:
        return seen[-1], f"{exc}; allocatable {seen[-1] or 'none'}, expected {want}"
    except WaitTimeout as exc:
        return seen[-1], (f"after {config}: mig.config.state=success but allocatable did not converge to the "
                          f"mig-parted config: {exc}")
    return seen[-1], None


def round_trip(cluster: Cluster, node: str, to: str, *, timeout: float, cleanup: Cleanup,
               expected_allocatable: Callable[[str], dict[str, int]]) -> list[Step]:
    """Switch ``node`` to ``to`` and back; stops at the first step with a problem (the
    original label is then put back by the registered cleanup)."""
    current = cluster.get_json(f"/api/v1/nodes/{node}")
    original = nodes.labels(current).get(nodes.LABEL_MIG_CONFIG) or "all-disabled"
    cleanup.add(f"mig.config of {node}", lambda: restore(cluster, node))
    first = apply(cluster, node, to, restore_to=original, timeout=timeout, expected_allocatable=expected_allocatable)
    if first.problem:
        return [first]
    back = apply(cluster, node, original, restore_to=None, timeout=timeout, expected_allocatable=expected_allocatable)
    cleanup.discard(f"mig.config of {node}")
    return [first, back]
