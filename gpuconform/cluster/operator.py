"""The GPU Operator as its objects show it: ClusterPolicy spec values, operand DaemonSets,
validator pods. Pure functions over API JSON; each problem is one short line naming the node."""
from __future__ import annotations

from typing import Any

from gpuconform.cluster import nodes as nodes_mod
from gpuconform.cluster.pods import describe_pod, pod_ready

MISSING = object()


def spec_value(spec: dict, dotted: str) -> Any:
    """``spec['mig']['strategy']`` for ``mig.strategy``; ``MISSING`` when a step is absent."""
    value: Any = spec
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return MISSING
        value = value[part]
    return value


def env_value(env: list[dict] | None, name: str) -> Any:
    for e in env or []:
        if e.get("name") == name:
            return e.get("value", "")
    return MISSING


def selector_matches(node_labels: dict[str, str], node_selector: dict[str, str] | None) -> bool:
    return all(node_labels.get(k) == v for k, v in (node_selector or {}).items())


def label_selector(match_labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))


#: taints the DaemonSet controller tolerates on every DaemonSet pod by itself
DAEMONSET_TOLERATED = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                       "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
                       "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable",
                       "node.kubernetes.io/network-unavailable")


def operand_unscheduled(ds: dict, gpu_nodes) -> list[str]:
    """GPU workers the DaemonSet cannot place a pod on (nodeSelector or taints), with why."""
    pod_spec = ds["spec"]["template"].get("spec") or {}
    selector = pod_spec.get("nodeSelector") or {}
    out = []
    for node in gpu_nodes:
        node_labels = nodes_mod.labels(node)
        wrong = {k: v for k, v in selector.items() if node_labels.get(k) != v}
        if wrong:
            shown = ", ".join(f"{k}={node_labels.get(k, '<unset>')} (wants {v})" for k, v in wrong.items())
            out.append(f"{nodes_mod.name(node)}: label {shown}")
            continue
        for taint in (node.get("spec") or {}).get("taints") or []:
            if taint.get("key") in DAEMONSET_TOLERATED:
                continue
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not nodes_mod.tolerates(
                    pod_spec.get("tolerations") or [], taint):
                out.append(f"{nodes_mod.name(node)}: taint {taint.get('key')}:{taint.get('effect')} not tolerated")
                break
    return out


def operand_short(ds: dict) -> bool:
    st = ds.get("status") or {}
    desired = st.get("desiredNumberScheduled", 0)
    return (st.get("numberAvailable", 0) < desired or st.get("numberReady", 0) < desired
            or st.get("observedGeneration", 0) < ds["metadata"].get("generation", 0))


def operand_pods_not_available(pods, gpu_node_names) -> list[str]:
    """Per GPU worker: no pod of the operand there, or one that is not Ready (with its state)."""
    by_node: dict[str, list[dict]] = {}
    for p in pods:
        if not p["metadata"].get("deletionTimestamp"):
            by_node.setdefault((p.get("spec") or {}).get("nodeName") or "", []).append(p)
    out = []
    for node in gpu_node_names:
        mine = by_node.get(node, [])
        if not mine:
            out.append(f"{node}: no pod")
        elif not any(pod_ready(p) for p in mine):
            out.append(f"{node}: {'; '.join(describe_pod(p) for p in mine)}")
    return out


def validator_problems(pods, gpu_node_names) -> list[str]:
    """Per GPU worker: the nvidia-operator-validator pod Ready (every validation init container
    done) and the cuda / device-plugin validation pods Succeeded."""
    by = {}
    for p in pods:
        app = (p["metadata"].get("labels") or {}).get("app", "")
        by.setdefault((app, (p.get("spec") or {}).get("nodeName")), []).append(p)
    out = []
    for node in gpu_node_names:
        for app, done in (("nvidia-operator-validator", pod_ready),
                          ("nvidia-cuda-validator", lambda p: (p.get("status") or {}).get("phase") == "Succeeded"),
                          ("nvidia-device-plugin-validator", lambda p: (p.get("status") or {}).get("phase") == "Succeeded")):
            mine = by.get((app, node), [])
            if not mine:
                out.append(f"{node}: no {app} pod")
            elif not any(done(p) for p in mine):
                out.append(f"{node}: {'; '.join(describe_pod(p) for p in mine)}")
    return out
