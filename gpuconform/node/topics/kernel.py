"""The kernel's settings: its command line and its tunables (sysctl)."""
from __future__ import annotations

from functools import cached_property

from gpuconform.node.topic import Base, Companion, Step
from gpuconform.parsers import kernel

STEPS = (
    Step("cmdline", "cat /proc/cmdline", "cat /proc/cmdline"),
    Step("sysctl", 'set -f; for k in $GPUC_SYSCTLS; do f="/proc/sys/$(echo "$k" | tr . /)"; '
                   'if [ -r "$f" ]; then echo "$k=$(cat "$f")"; else echo "$k=?"; fi; done; true',
         "cat /proc/sys/<key>  (each sysctl key of the profile)"),
)
TOOLS: tuple[str, ...] = ()


class Facts(Base):
    @cached_property
    def cmdline(self) -> list[tuple[str, str | None]]:
        return kernel.parse_cmdline(self._file("cmdline", "/proc/cmdline"))

    def cmdline_has(self, param: str) -> bool:
        return kernel.cmdline_has(self.cmdline, param)

    @cached_property
    def sysctl(self) -> dict[str, str | None]:
        return kernel.parse_sysctl(self.section("sysctl").out)


def cmdline_values(facts, expected, param):
    """What kernel-cmdline.sh adds and removes: the profile's required and forbidden parameters."""
    return (("ADD", " ".join(expected.kernel.cmdline_required)),
            ("REMOVE", " ".join(expected.kernel.cmdline_forbidden)))


def _sysctl(facts, expected, param):
    rule = expected.sysctl.get(param or "")
    if rule is None:
        return None
    value = rule.eq if rule.eq is not None else rule.max if rule.max is not None else rule.min
    return (("SYSCTLS", f"{param}={value}"),)


CMDLINE = Companion("kernel-cmdline.sh", cmdline_values)
COMPANIONS = {
    "node.kernel.cmdline_required": CMDLINE,
    "node.kernel.cmdline_forbidden": CMDLINE,
    "node.sysctl": Companion("sysctl.sh", _sysctl),
}
