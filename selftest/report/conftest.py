"""Fixtures of the report selftests: simulated hosts as chroot roots, runs of the real suite, a
headless browser.

The hosts are testbed scenarios (testbed/hosts) rendered into roots under a temporary folder and
reached with testinfra's chroot backend (``--connection=chroot --hosts=/root/a,/root/b``): no
sshd, no network, so a run over 100 hosts stays fast. The browser is Debian's chromium
(installed by ``make sysdeps``), driven headless: ``--dump-dom`` gives the page after its scripts
ran, ``--screenshot`` a PNG kept as a test artifact.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from report_harness import SHOWCASE, mixed_mig_scenario, plant_secrets
from testbed.hosts import rootfs, scenarios


def pytest_collection_modifyitems(items):
    for item in items:
        if "selftest/report/" in item.nodeid.replace("\\", "/"):
            item.add_marker(pytest.mark.slow)



@pytest.fixture(scope="session")
def host_roots(tmp_path_factory) -> dict[str, Path]:
    """Scenario name → its root; plus "mig-mixed" (several MIG layouts) and "leaky" (a good host
    with secrets planted)."""
    if os.geteuid() != 0:
        pytest.skip("chroot hosts need root")
    base = tmp_path_factory.mktemp("hosts")
    roots = {name: rootfs.render(scenarios.build(name), base / name) for name in SHOWCASE}
    roots["mig-mixed"] = rootfs.render(mixed_mig_scenario(scenarios), base / "mig-mixed")
    roots["leaky"] = rootfs.render(scenarios.build("gpu-good"), base / "leaky")
    plant_secrets(roots["leaky"])
    return roots


