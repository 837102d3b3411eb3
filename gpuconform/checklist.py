"""The CNCF Kubernetes AI Conformance checklist: its requirement ids and their level in each
version, as the checklists state them (cncf/k8s-ai-conformance docs/AIConformance-1.33.md,
-1.34.md, -1.35.md; kubernetes-sigs/ai-conformance
conformance-versions/KubernetesAIConformance-1.36.yaml). ``dra_support`` is in 1.33 (SHOULD),
1.34 and 1.35 (MUST) and no longer in 1.36; driver_runtime_management, gpu_sharing and
virtualized_accelerator arrive in 1.35; 1.36 adds three networking SHOULDs.

Data only: the checks (tests/cluster/test_aiconformance.py, check ids ``aiconf.<id>``) and the
profile (``ai_conformance:``) read it."""
from __future__ import annotations

MUST, SHOULD = "MUST", "SHOULD"

_CORE = {"ai_inference": MUST, "gang_scheduling": MUST, "cluster_autoscaling": MUST, "pod_autoscaling": MUST,
         "accelerator_metrics": MUST, "ai_service_metrics": MUST, "secure_accelerator_access": MUST,
         "robust_controller": MUST}
_ACCELERATORS_135 = {"driver_runtime_management": SHOULD, "gpu_sharing": SHOULD, "virtualized_accelerator": SHOULD}

#: checklist version -> {requirement id: level}
LEVELS: dict[str, dict[str, str]] = {
    "1.33": {"dra_support": SHOULD, **_CORE},
    "1.34": {"dra_support": MUST, **_CORE},
    "1.35": {"dra_support": MUST, **_ACCELERATORS_135, **_CORE},
    "1.36": {**_ACCELERATORS_135, **_CORE, "advanced_inference_ingress": SHOULD,
             "high_performance_networking": SHOULD, "disaggregated_inference": SHOULD},
}
VERSIONS = tuple(LEVELS)
REQUIREMENTS = frozenset(r for levels in LEVELS.values() for r in levels)

#: what the suite judges on the platform; the others it cannot decide (a gang scheduler, an
#: autoscaler, an inference gateway ...): their status is the one the profile declares
DECIDED = frozenset({"secure_accelerator_access", "driver_runtime_management", "accelerator_metrics",
                     "gpu_sharing", "dra_support", "robust_controller"})
UNDECIDED = REQUIREMENTS - DECIDED

STATUSES = ("Implemented", "Not Implemented", "Partially Implemented", "N/A")


def level(version: str, requirement: str) -> str | None:
    """MUST, SHOULD, or None where the checklist of ``version`` has no such requirement."""
    return LEVELS[version].get(requirement)
