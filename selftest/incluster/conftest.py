"""The in-cluster selftests run against the cluster bed of selftest/cluster_checks (the same
control plane when one runs already in this pytest process's state folder, else started here).

Fixtures:
* ``platform`` -- the running cluster bed (session);
* ``admin`` -- the suite's own connection to it as the bed's admin (to set things up);
* ``installed`` -- manifests/in-cluster's namespace, ServiceAccount, RBAC and admission
  policy applied (session),
  deleted afterwards;
* ``sa_token`` -- a token of that ServiceAccount (TokenRequest);
* ``sa_kubeconfig`` -- a kubeconfig holding that token and the bed's CA, nothing of the admin.
"""
from __future__ import annotations

import pytest

import incluster_harness as h
from cluster_harness import shared_platform
from gpuconform.cluster.connect import connect


@pytest.fixture(scope="session")
def platform():
    with shared_platform() as bed:
        yield bed


@pytest.fixture(scope="session")
def admin(platform):
    cluster = connect(str(platform.kubeconfig), timeout=30)
    yield cluster
    cluster.close()


@pytest.fixture(scope="session")
def installed(admin):
    objects = h.documents(h.IN_CLUSTER / "00-namespace.yaml") + h.documents(h.RBAC) + h.documents(h.FENCE)
    for obj in objects:
        h.apply(admin, obj)
    h.wait_access(admin, True, "list", "nodes")
    yield objects
    for obj in reversed(objects):
        h.delete(admin, obj)


@pytest.fixture(scope="session")
def sa_token(admin, installed, platform, tmp_path_factory) -> str:
    """A token of the ServiceAccount, once its RBAC and admission policy are in force."""
    token = h.token(admin)
    kubeconfig = h.token_kubeconfig(tmp_path_factory.mktemp("sa") / "kubeconfig", platform.server,
                                    h.ca_file(platform.kubeconfig), token)
    sa = connect(str(kubeconfig), timeout=30)
    h.wait_fence(sa)
    sa.close()
    return token


@pytest.fixture
def sa_kubeconfig(platform, sa_token, tmp_path):
    return h.token_kubeconfig(tmp_path / "sa.kubeconfig", platform.server, h.ca_file(platform.kubeconfig), sa_token)
