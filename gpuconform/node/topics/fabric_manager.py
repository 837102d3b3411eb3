"""NVIDIA Fabric Manager (NVSwitch systems): the package at the driver's version, the service active."""
from __future__ import annotations

from functools import cached_property

from gpuconform.node.topic import Base, CheckText, Companion, Step
from gpuconform.parsers import host

STEPS = (
    # dpkg lists packages in every state (removed but not purged: rc, merely known: un), so its
    # state goes with each line; rpm -qa lists installed packages only (each installed version)
    Step("fm_packages", "{ rpm -qa --qf 'rpm %{NAME} %{VERSION}\\n' 'nvidia-fabric*manager*' 2>/dev/null; "
                        "dpkg-query -W -f 'dpkg ${db:Status-Abbrev} ${Package} ${Version}\\n' "
                        "'nvidia-fabricmanager*' 2>/dev/null; true; }",
         "rpm -qa 'nvidia-fabric*manager*' || dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n' "
         "'nvidia-fabricmanager*'"),
    Step("fm_version", "$T nv-fabricmanager --version", "nv-fabricmanager --version"),
)
TOOLS = ("nv-fabricmanager",)


class Facts(Base):
    @cached_property
    def fabric_manager_packages(self) -> tuple[host.Package, ...]:
        """Every fabric manager package the package manager knows, installed or not."""
        return host.parse_packages(self.section("fm_packages").out)


def _install(facts, expected, param):
    loaded = facts.driver_proc_version
    if loaded and loaded.version != expected.driver.version:
        return None  # the driver itself is not the profile's: fix the driver, not fabric manager
    return (("NVIDIA_VERSION", expected.driver.version),)


_INSTALL = Companion("fabricmanager.sh", _install)
COMPANIONS = {
    "node.fabricmanager.version": _INSTALL,
    "node.fabricmanager.active": _INSTALL,
}


# -- the checks' words (their checks: tests/node/test_fabric_manager.py)

FABRICMANAGER_VERSION: CheckText = {
    "title": "Fabric manager version equals the driver version",
    "fix": {"rhel": "dnf install nvidia-fabric-manager-<driver version>  (versions must match exactly)",
            "debian": "apt-get install nvidia-fabricmanager-<branch>=<driver version>-1",
            "default": "install the fabric manager package of exactly the driver's version"},
    "evidence": ["fm_packages", "fm_version"],
}

FABRICMANAGER_ACTIVE: CheckText = {
    "title": "nvidia-fabricmanager service is active",
    "fix": "systemctl enable --now nvidia-fabricmanager; journalctl -u nvidia-fabricmanager",
    "evidence": ["pid1", "systemd_units", "processes"],
}
