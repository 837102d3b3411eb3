"""Shared by the cluster-check selftests: where the bed lives, the profile, results by check,
the GPU workers backed by host roots for node checks through k8s-node://."""
from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Callable, Iterator

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
    from testbed.kube import client_for
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


#: the node checks through k8s-node:// of the bed's three GPU workers, each backed by the root of
#: a testbed/hosts scenario: two good, one whose DKMS has the driver only "added" (not built)
GOOD, FAULTY = "gpu-good", "dkms-added"
BACKING = {"gpu-worker-1": GOOD, "gpu-worker-2": FAULTY, "gpu-worker-3": GOOD}
FAULTY_CHECK = "node.dkms.nvidia_installed"  # what FAULTY fails, and nothing else


@contextlib.contextmanager
def backed_workers(platform, backing: dict[str, str] = BACKING) -> Iterator:
    """The workers of ``backing`` backed by those scenarios' roots (testbed/cluster/hostexec.py
    runs a probe pod's command there); unbacked again afterwards. Yields a CoreV1Api."""
    from kubernetes import client
    from testbed.cluster import hostexec
    core = client.CoreV1Api(platform.api)
    hostexec.back(core, backing)
    try:
        yield core
    finally:
        hostexec.back(core, {node: None for node in backing})


def probe_leftovers(core) -> list[str]:
    """Probe pods, and probe namespaces of runs, that are not yet gone."""
    left = [f"{p.metadata.namespace}/{p.metadata.name}" for p in core.list_pod_for_all_namespaces(
        label_selector="app.kubernetes.io/component=node-probe").items]
    left += [n.metadata.name for n in core.list_namespace(label_selector="app.kubernetes.io/managed-by=gpuconform").items
             if n.metadata.name.endswith("-node-probes")]
    return left


def wait_gone(leftovers: Callable[[], list[str]], timeout: float = 60) -> None:
    """Until ``leftovers()`` is empty (namespaces take a while to finish terminating)."""
    deadline = time.monotonic() + timeout
    while (left := leftovers()) and time.monotonic() < deadline:
        time.sleep(1)
    assert not left, f"left behind after the run: {left}"


def profile_variant(path: Path, override: dict) -> Path:
    """The seed profile with ``override`` deep-merged into it, written to ``path``."""
    import yaml

    from gpuconform.profile import _merge
    path.write_text(yaml.safe_dump(_merge(yaml.safe_load(PROFILE.read_text()), override), sort_keys=False))
    return path
