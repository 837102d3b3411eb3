"""What a GPU node says about itself (labels, conditions, allocatable), from its JSON."""
from __future__ import annotations

from gpuconform.mig import RESOURCE_GPU, RESOURCE_MIG_PREFIX

LABEL_PRESENT = "nvidia.com/gpu.present"
LABEL_PRODUCT = "nvidia.com/gpu.product"
LABEL_COUNT = "nvidia.com/gpu.count"
LABEL_MIG_CONFIG = "nvidia.com/mig.config"
LABEL_MIG_STATE = "nvidia.com/mig.config.state"
LABEL_MIG_CAPABLE = "nvidia.com/mig.capable"
LABEL_OPERANDS = "nvidia.com/gpu.deploy.operands"
LABEL_VGPU_HOST = "nvidia.com/vgpu.host-driver-version"


def name(node: dict) -> str:
    return node["metadata"]["name"]


def labels(node: dict) -> dict[str, str]:
    return node["metadata"].get("labels") or {}


def mig_capable(node_labels: dict[str, str]) -> bool:
    """Whether the GPU Operator deploys its MIG manager on a node with these labels (NVIDIA/
    gpu-operator controllers/state_manager.go hasMIGCapableGPU: ``nvidia.com/mig.capable``, or
    without it a product naming H100, A100 or A30; never a vGPU host)."""
    if node_labels.get(LABEL_VGPU_HOST):
        return False
    if LABEL_MIG_CAPABLE in node_labels:
        return node_labels[LABEL_MIG_CAPABLE] == "true"
    product = node_labels.get(LABEL_PRODUCT, "").lower()
    return any(model in product for model in ("h100", "a100", "a30"))


def operands_disabled(node_labels: dict[str, str]) -> bool:
    """``nvidia.com/gpu.deploy.operands=false``: the GPU Operator removes every operand's deploy
    label from the node ("Operands are disabled for node", state_manager.go updateGPUStateLabels)."""
    return node_labels.get(LABEL_OPERANDS) == "false"


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
