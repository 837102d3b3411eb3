"""Shared by the cluster-check selftests: where the bed lives, the profile, results by check."""
from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: the control plane of selftest/cluster (its folder for this pytest process: one control plane
#: at a time on a small machine); GPUCONFORM_SELFTEST_CLUSTER_STATE=DIR uses a folder of one's own
STATE = Path(os.environ.get("GPUCONFORM_SELFTEST_CLUSTER_STATE")
             or REPO / ".state" / "selftest-cluster" / str(os.getpid()))
PROFILE = REPO / "profiles" / "seed-h100.yaml"


def by_check(doc: dict | None) -> dict[tuple[str, str | None], dict]:
    """``{(check_id, param): result}`` of a JSON report."""
    return {(r["check_id"], r["param"]): r for r in (doc or {}).get("results", [])}
