"""The session's simulated GPU hosts (testbed/hosts), served over real SSH.

Fixtures:
* ``ssh_nodes``    -- every scenario built and served by its own sshd (session scope);
* ``node_suite_run`` -- the real node suite run once over all nodes (``--setup-show``, ``--durations``, JUnit):
  the process, its JSON document and its report folder;
* ``node_results`` -- that run's JSON results by scenario.

Only one set of simulated hosts can run at a time: starting them sweeps any other (``make hosts-up``).
"""
from __future__ import annotations

import os

import pytest

from harness import STATE, by_scenario, run_over_every_node
from testbed.hosts import net, scenarios


def pytest_configure(config):
    config.addinivalue_line("markers", "testbed_hosts: proves the simulated GPU hosts (selftest/node)")


def pytest_collection_modifyitems(items):
    for item in items:
        if "selftest/node/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.testbed_hosts)
            item.add_marker(pytest.mark.slow)


def _skip_unless_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("the simulated hosts need root (network namespaces, chroot, mknod)")


@pytest.fixture(scope="session")
def ssh_nodes():
    _skip_unless_root()
    with net.SshNodes(scenarios.names(), STATE) as nodes:
        yield nodes


@pytest.fixture(scope="session")
def node_suite_run(ssh_nodes, tmp_path_factory):
    report_dir = tmp_path_factory.mktemp("node-suite")
    proc, results = run_over_every_node(ssh_nodes, report_dir)
    return proc, results, report_dir


@pytest.fixture(scope="session")
def node_results(node_suite_run) -> dict[str, list[dict]]:
    return by_scenario(node_suite_run[1])
