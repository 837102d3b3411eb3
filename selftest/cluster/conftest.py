"""The session's simulated cluster: a real control plane with KWOK GPU workers (testbed/cluster).

Fixtures:
* ``cluster_bed``   -- the started :class:`testbed.cluster.bed.TestBed` (session scope); every
  test that applies a fault scenario resets it afterwards (``cluster_scenario``);
* ``core_v1``       -- ``kubernetes.client.CoreV1Api`` on the bed;
* ``test_namespace`` -- a fresh, Pod-Security-restricted namespace, deleted after the test;
* ``cluster_scenario`` -- callable applying a named fault for this test only.
"""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from kubernetes import client

from runner import process_state
from testbed.cluster.bed import TestBed
from testbed.cluster.controlplane import REPO
from testbed.cluster.procs import Supervisor
from testbed.kube import ignore_not_found, service_account_exists
from testbed.waiting import wait_for

# One bed per pytest process (xdist workers and concurrent runs each need their own ports and
# state folder): .state/selftest-cluster/<pid>. Folders of runs whose process is gone are swept.
STATE_ROOT = REPO / ".state" / "selftest-cluster"
HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    config.addinivalue_line("markers", "testbed_cluster: proves the simulated Kubernetes test bed (selftest/cluster)")


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(item.path).is_relative_to(HERE):
            item.add_marker(pytest.mark.testbed_cluster)


@pytest.fixture(scope="session")
def cluster_bed():
    with process_state(STATE_ROOT, lambda folder: Supervisor(folder).stop_all()) as state:
        bed = TestBed(state, attached=True)
        bed.start()
        try:
            yield bed
        finally:
            bed.stop()


@pytest.fixture
def core_v1(cluster_bed) -> client.CoreV1Api:
    return client.CoreV1Api(cluster_bed.api)


@pytest.fixture
def test_namespace(core_v1):
    name = f"gpuconform-selftest-{uuid.uuid4().hex[:6]}"
    core_v1.create_namespace({"metadata": {"name": name, "labels": {
        "app.kubernetes.io/managed-by": "gpuconform-selftest",
        "pod-security.kubernetes.io/enforce": "restricted"}}})
    wait_for(f"service account default in {name}", lambda: service_account_exists(core_v1.api_client, name, "default"), 30)
    yield name
    ignore_not_found(core_v1.delete_namespace, name)


@pytest.fixture
def cluster_scenario(cluster_bed):
    applied = []

    def apply(name: str) -> None:
        applied.append(name)
        cluster_bed.apply_scenario(name)

    yield apply
    if applied:
        cluster_bed.reset()
