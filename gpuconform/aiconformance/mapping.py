"""Which results decide which requirement: the one place that says it.

A requirement ``<id>`` of a checklist is decided by the checks whose id is ``aiconf.<id>`` (the
checks written for the program, marker ``aiconformance``) and by the suite's own checks listed in
SUITE_CHECKS, whose rule the checklist's wording covers. The plugin marks every check named here
``aiconformance`` too, so ``-m aiconformance`` runs all that feeds the export."""
from __future__ import annotations

PREFIX = "aiconf."

#: requirement id -> the suite's checks whose rule is (part of) that requirement
SUITE_CHECKS: dict[str, tuple[str, ...]] = {
    # "access to accelerators from within containers is properly isolated and mediated by the
    # Kubernetes resource management framework ... preventing unauthorized access or interference"
    "secure_accelerator_access": ("cluster.workload.isolation", "cluster.mig.one_device"),
    # "compatible accelerator drivers and corresponding container runtime configurations are
    # correctly installed and maintained": the GPU Operator's own validation of driver and toolkit
    "driver_runtime_management": ("cluster.operator.validation",),
    # "if hardware-level partitioning is supported, these fractional GPU resources should be
    # exposed as schedulable resources": MIG slices allocatable as the profile's layout says
    "gpu_sharing": ("cluster.mig.allocatable", "cluster.node.sharing"),
}


def may_decide(check_id: str) -> bool:
    """Whether ``check_id`` decides a requirement of some checklist: answered without one."""
    return check_id.startswith(PREFIX) or any(check_id in checks for checks in SUITE_CHECKS.values())


def requirement_of(check_id: str, requirement_ids) -> str | None:
    """The requirement (of ``requirement_ids``) that ``check_id`` decides, or None."""
    if check_id.startswith(PREFIX):
        wanted = check_id[len(PREFIX):]
        return wanted if wanted in requirement_ids else None
    return next((r for r in requirement_ids if check_id in SUITE_CHECKS.get(r, ())), None)
