"""The cluster checks (tests/cluster) run for real against the simulated cluster
(testbed/cluster): a real API server, scheduler and controllers with KWOK GPU workers, NVIDIA's
GPU Operator controller, and the simulated operands (MIG manager, device plugin: nodeagent.py).

Fixtures:
* ``platform`` -- the running :class:`~testbed.cluster.bed.TestBed` (session).
  One control plane at a time on a small machine: it is the one of selftest/cluster (same state
  folder) when that one runs already, else it starts it;
* ``run_cluster`` -- runs ``pytest -m cluster`` against it in a subprocess and returns the
  process and ``{(check_id, param): result}``;
* ``fault`` -- applies a named fault scenario for this test, resets the bed afterwards.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from cluster_harness import PROFILE, by_check, profile_variant, shared_platform
from runner import run_suite


@pytest.fixture(scope="session")
def platform():
    with shared_platform() as bed:
        yield bed


@pytest.fixture
def run_cluster(platform, tmp_path):
    """``run_cluster(*args, profile=PATH)``: the cluster layer against the bed, in a subprocess."""
    def run(*args: str, profile: Path = PROFILE, kubeconfig: Path | None = None, timeout: float = 300):
        proc, doc = run_suite("-m", "cluster", "-q", f"--profile={profile}",
                              f"--kubeconfig={kubeconfig or platform.kubeconfig}", *args,
                              report_dir=tmp_path / f"reports-{len(list(tmp_path.glob('reports-*')))}",
                              timeout=timeout)
        assert doc, f"no JSON report (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-4000:]
        return proc, by_check(doc)
    return run


@pytest.fixture
def fault(platform):
    applied: list[str] = []

    def apply(*names: str) -> None:
        for name in names:
            applied.append(name)
            platform.apply_scenario(name)

    yield apply
    if applied:
        platform.reset()


@pytest.fixture
def profile_with(tmp_path):
    """``profile_with({"cluster": {...}})``: the seed profile with a deep-merged override."""
    return lambda override, name="variant.yaml": profile_variant(tmp_path / name, override)


@pytest.fixture
def exporter(platform):
    """``exporter(per_device=True, answering=True)``: the simulated dcgm-exporter at each pod of the GPU Operator's
    nvidia-dcgm-exporter DaemonSet, for the test; {pod: URL}. The AI Conformance runs reach it as a
    platform's Prometheus would, through the operator's Service (the profile's default endpoint)."""
    import contextlib

    from testbed.cluster.dcgmexporter import at_exporter_pods
    with contextlib.ExitStack() as stack:
        yield lambda per_device=True, answering=True: stack.enter_context(
            at_exporter_pods(platform.api, per_device, answering))


@pytest.fixture
def dra_driver(platform):
    """``dra_driver(kubelet_plugin_running=True)``: the simulated NVIDIA DRA driver's DeviceClass
    and ResourceSlices (testbed/cluster/dradriver.py) for the test; the slices' names."""
    import contextlib

    from testbed.cluster.dradriver import installed
    with contextlib.ExitStack() as stack:
        yield lambda kubelet_plugin_running=True: stack.enter_context(installed(platform.api, kubelet_plugin_running))
