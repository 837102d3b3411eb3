"""What a GPU node says about itself (labels, conditions, allocatable), from its JSON."""
from __future__ import annotations

from gpuconform.mig import RESOURCE_GPU, RESOURCE_MIG_PREFIX

LABEL_PRESENT = "nvidia.com/gpu.present"
LABEL_PRODUCT = "nvidia.com/gpu.product"
LABEL_COUNT = "nvidia.com/gpu.count"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"
LABEL_MIG_STATE = "nvidia.com/mig.config.state"


def name(node: dict) -> str:
    return node["metadata"]["name"]


def labels(node: dict) -> dict[str, str]:
    return node["metadata"].get("labels") or {}


def ready_condition(node: dict) -> dict | None:
    return next((c for c in (node.get("status") or {}).get("conditions") or [] if c.get("type") == "Ready"), None)


def describe_ready(node: dict) -> str:
    """``Ready=True`` or ``Ready=False (KubeletNotReady: message)``."""
    cond = ready_condition(node)
    if cond is None:
        return "no Ready condition reported"
    text = f"Ready={cond.get('status')}"
    if cond.get("status") != "True":
        text += f" ({cond.get('reason', '')}: {cond.get('message', '')})"
    return text


def is_ready(node: dict) -> bool:
    cond = ready_condition(node)
    return cond is not None and cond.get("status") == "True"


def quantity(value) -> int:
    """An extended resource's count: integers, suffixed quantities (``1k``) read by the Kubernetes
    client's own parser."""
    from kubernetes.utils import parse_quantity  # the client loads only when a cluster check runs
    return int(parse_quantity(value))


def gpu_allocatable(node: dict) -> dict[str, int]:
    """``nvidia.com/gpu`` and ``nvidia.com/mig-*`` allocatable, zero counts left out."""
    alloc = (node.get("status") or {}).get("allocatable") or {}
    out = {k: quantity(v) for k, v in alloc.items() if k == RESOURCE_GPU or k.startswith(RESOURCE_MIG_PREFIX)}
    return {k: v for k, v in sorted(out.items()) if v}


def mig_resources_offered(nodes) -> dict[str, dict[str, int]]:
    """MIG resource -> {node: allocatable} over ``nodes`` (only nodes offering it)."""
    out: dict[str, dict[str, int]] = {}
    for n in nodes:
        for res, count in gpu_allocatable(n).items():
            if res.startswith(RESOURCE_MIG_PREFIX):
                out.setdefault(res, {})[name(n)] = count
    return dict(sorted(out.items()))


def whole_gpus_offered(nodes) -> dict[str, int]:
    """node -> allocatable whole GPUs, for nodes that offer any."""
    return {name(n): c for n in nodes if (c := gpu_allocatable(n).get(RESOURCE_GPU, 0))}


def tolerates(tolerations: list[dict], taint: dict) -> bool:
    """Whether ``tolerations`` (pod spec JSON) tolerate ``taint`` (key, value, effect)."""
    for t in tolerations or []:
        if t.get("effect") and t["effect"] != taint.get("effect"):
            continue
        if t.get("operator", "Equal") == "Exists":
            if not t.get("key") or t["key"] == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and (t.get("value") or "") == (taint.get("value") or ""):
            return True
    return False
