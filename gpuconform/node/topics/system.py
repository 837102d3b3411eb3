"""The host itself: kernel release, OS, init, loaded modules, systemd units, processes."""
from __future__ import annotations

from functools import cached_property

from gpuconform.errors import CannotTell
from gpuconform.node.topic import Base, CheckText, Step
from gpuconform.parsers import host, kernel, kmod, systemd

UNIT_PROPERTIES = "Id,LoadState,ActiveState,SubState,UnitFileState"

STEPS = (
    Step("osrelease", "cat /proc/sys/kernel/osrelease", "cat /proc/sys/kernel/osrelease"),
    Step("os_release", "cat /etc/os-release", "cat /etc/os-release"),
    Step("pid1", "cat /proc/1/comm", "cat /proc/1/comm"),
    Step("proc_modules", "cat /proc/modules", "cat /proc/modules"),
    Step("systemd_units", f"set -f; systemctl show -p {UNIT_PROPERTIES} $GPUC_UNITS",
         f"systemctl show -p {UNIT_PROPERTIES} <the profile's units>"),
    Step("processes", 'for p in /proc/[0-9]*; do [ -r "$p/comm" ] && echo "${p#/proc/} $(cat "$p/comm")"; done; true',
         "cat /proc/[0-9]*/comm"),
)
TOOLS = ("systemctl", "rpm", "dpkg-query", "timeout")
COMPANIONS: dict = {}

#: at most this much of a host's os-release field is kept: a 5 MB PRETTY_NAME must not make a 20 MB report
FIELD_BYTES = 256


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` bytes of UTF-8, saying how many were cut: ``… (N bytes cut)``."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + f"… ({len(data) - limit} bytes cut)"


class Facts(Base):
    @cached_property
    def kernel_release(self) -> str:
        return self._file("osrelease", "/proc/sys/kernel/osrelease").strip()

    @cached_property
    def os_release(self) -> dict[str, str]:
        fields = kernel.parse_os_release(self._file("os_release", "/etc/os-release"))
        return {k: clip(v, FIELD_BYTES) for k, v in fields.items()}

    @cached_property
    def os_family(self) -> str | None:
        """rhel, debian or suse from /etc/os-release; None when it names none of them or cannot be read."""
        try:
            return kernel.os_family(self.os_release)
        except CannotTell:
            return None

    @cached_property
    def systemd_is_init(self) -> bool:
        return self._file("pid1", "/proc/1/comm").strip() == "systemd"

    @cached_property
    def modules(self) -> dict[str, kmod.Module]:
        return kmod.parse_proc_modules(self._file("proc_modules", "/proc/modules"))

    @cached_property
    def units(self) -> dict[str, systemd.Unit]:
        if not self.systemd_is_init:
            raise CannotTell("systemd is not the init system (PID 1) on this host: the unit state cannot be read")
        self.require_tool("systemctl")
        return systemd.parse_show(self.section("systemd_units").out)

    def unit(self, name: str) -> systemd.Unit:
        return self.units.get(name) or systemd.Unit(name)

    @cached_property
    def processes(self) -> frozenset[str]:
        """Process names as the kernel keeps them (/proc/<pid>/comm: at most 15 characters)."""
        return host.parse_processes(self.section("processes").out)

    def process_running(self, name: str) -> bool:
        return name[:15] in self.processes


# -- the checks' words (their checks: tests/node/test_os.py, test_reachable.py)

OS_FAMILY: CheckText = {
    "title": "The host's OS family is the profile's",
    "fix": "the host runs another distribution family than the profile declares: reinstall it, move it to "
           "the right pool, or declare its family (node.os_family, or a group matching this host)",
    "evidence": ["os_release"],
}

OS_VERSION: CheckText = {
    "title": "The host's OS release is the profile's",
    "fix": "the host runs another release than the profile declares: upgrade or reinstall it to that release, "
           "move it to the right pool, or declare its release (node.os_version, or a group matching this host)",
    "evidence": ["os_release"],
}

REACHABLE: CheckText = {
    "title": "Host answers the read-only probe",
    "fix": "Check SSH access (key, user, --ssh-config) and that the host is up; "
           "raise timeouts.probe_s in the profile for slow hosts.",
    "evidence": (),
}
