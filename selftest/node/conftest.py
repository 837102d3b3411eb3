"""The session's simulated GPU hosts (testbed/hosts), served over real SSH.

Fixtures:
* ``ssh_nodes``    -- every scenario built and served by its own sshd (session scope);
* ``node_results`` -- the real node suite run once over all nodes, its JSON results by scenario;
* ``run_node_suite`` -- callable running ``pytest -m node`` in a subprocess from the repo root.
"""
from __future__ import annotations

import collections
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testbed.hosts import net, scenarios

REPO = Path(__file__).resolve().parents[2]
STATE = REPO / ".state" / "selftest-hosts"
PROFILE = REPO / "profiles" / "seed-h100.yaml"
SUITE_TIMEOUT_S = 300


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


def run_node_suite(*args: str, report_dir: Path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``pytest -m node`` with the seed profile, in a subprocess; returns it and its results."""
    report_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-m", "node", "-p", "no:cacheprovider", "-q",
           "--profile", str(PROFILE), "--report-dir", str(report_dir), *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=SUITE_TIMEOUT_S)
    reports = sorted(report_dir.glob("*.json"))
    assert reports, (f"the node suite wrote no JSON report (exit {proc.returncode}):\n"
                     f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc, json.loads(reports[-1].read_text())["results"]


def by_scenario(results: list[dict]) -> dict[str, list[dict]]:
    """Results grouped by scenario; a chroot host (``<state>/<scenario>/root``) counts as its scenario."""
    known = set(scenarios.names())
    grouped: dict[str, list[dict]] = collections.defaultdict(list)
    for r in results:
        host = r.get("host") or ""
        parts = Path(host.split("://")[-1]).parts
        name = host if host in known else next((p for p in reversed(parts) if p in known), host)
        grouped[name].append(r)
    return grouped


@pytest.fixture(scope="session")
def node_results(ssh_nodes, tmp_path_factory) -> dict[str, list[dict]]:
    _, results = run_node_suite(f"--hosts={ssh_nodes.hosts_arg}", f"--ssh-config={ssh_nodes.ssh_config}",
                                report_dir=tmp_path_factory.mktemp("node-suite"))
    return by_scenario(results)
