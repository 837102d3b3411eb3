"""Shared by the cluster-check selftests: where the bed lives, the profile, results by check."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator

REPO = Path(__file__).resolve().parents[2]
#: the control plane of selftest/cluster (its folder for this pytest process: one control plane
#: at a time on a small machine); GPUCONFORM_SELFTEST_CLUSTER_STATE=DIR uses a folder of one's own
STATE = Path(os.environ.get("GPUCONFORM_SELFTEST_CLUSTER_STATE")
             or REPO / ".state" / "selftest-cluster" / str(os.getpid()))
PROFILE = REPO / "profiles" / "seed-h100.yaml"


def by_check(doc: dict | None) -> dict[tuple[str, str | None], dict]:
    """``{(check_id, param): result}`` of a JSON report."""
    return {(r["check_id"], r["param"]): r for r in (doc or {}).get("results", [])}


@contextlib.contextmanager
def shared_platform() -> Iterator:
    """The good platform in ``STATE``: started here, or bound to the control plane already
    running in that folder (then reset to good, and left running)."""
    from testbed.cluster.bed import TestBed
    from testbed.cluster.controlplane import ControlPlane
    from testbed.cluster.kube import client_for
    from testbed.cluster.platform import Platform
    from testbed.cluster.scenarios import Scenarios
    bed = TestBed(STATE, attached=True)
    owned = not ControlPlane(STATE).running()
    if owned:
        bed.start()
    else:
        bed.api = client_for(bed.kubeconfig)
        bed.platform = Platform(bed.api)
        bed.scenarios = Scenarios(bed.platform)
        bed.reset()
    try:
        yield bed
    finally:
        if owned:
            bed.stop()
