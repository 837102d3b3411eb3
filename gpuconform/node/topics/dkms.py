"""DKMS: the NVIDIA module built and installed for the running kernel."""
from __future__ import annotations

from functools import cached_property

from gpuconform.errors import CannotTell
from gpuconform.node.topic import Base, CheckText, Companion, Step, failed
from gpuconform.parsers import dkms

STEPS = (
    Step("dkms_version", "$T dkms --version", "dkms --version"),
    Step("dkms_status", "$T dkms status", "dkms status"),
)
TOOLS = ("dkms",)


class Facts(Base):
    @cached_property
    def dkms_entries(self) -> list[dkms.DkmsEntry]:
        self.require_tool("dkms")
        sec = self.section("dkms_status")
        if not sec.ok:
            raise CannotTell(f"`dkms status` {failed(sec)}")
        return dkms.parse_status(sec.out)


def _install(facts, expected, param):
    if expected.driver.install != "dkms":
        return None
    names = expected.driver.dkms_module_names
    known = [e.module for e in facts.dkms_entries if e.module in names] if facts.tool("dkms") else []
    return (("NVIDIA_VERSION", expected.driver.version), ("DKMS_MODULE", (known or list(names))[0]),
            ("KERNEL", facts.kernel_release))


COMPANIONS = {
    "node.dkms.nvidia_installed": Companion("dkms-install.sh", _install),
}


# -- the checks' words (their checks: tests/node/test_dkms.py)

DKMS_NVIDIA_INSTALLED: CheckText = {
    "title": "DKMS has the NVIDIA module installed for the running kernel",
    "fix": "dkms install -m nvidia -v <version> -k $(uname -r)  (on failure read "
           "/var/lib/dkms/nvidia/<version>/build/make.log; `/bin/ld: Permission denied` → "
           "remediation/fix-ld.sh --apply, then reinstall)",
    "evidence": ["osrelease", "dkms_version", "dkms_status"],
}
