"""The kernel's settings: its command line and its tunables (sysctl)."""
from __future__ import annotations

from functools import cached_property

from gpuconform.node.topic import Base, CheckText, Companion, Step
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


# -- the checks' words (their checks: tests/node/test_kernel.py)
GRUB_ADD = {"rhel": "grubby --update-kernel=ALL --args='{p}' && reboot",
            "debian": "add '{p}' to GRUB_CMDLINE_LINUX in /etc/default/grub; update-grub && reboot",
            "default": "add '{p}' to the kernel command line of the boot loader and reboot"}
GRUB_REMOVE = {"rhel": "grubby --update-kernel=ALL --remove-args='{p}' && reboot",
               "debian": "remove '{p}' from GRUB_CMDLINE_LINUX in /etc/default/grub; update-grub && reboot",
               "default": "remove '{p}' from the kernel command line and reboot"}

KERNEL_CMDLINE_REQUIRED: CheckText = {
    "title": "Kernel command line carries the required parameter",
    "fix": {k: v.format(p="<parameter>") for k, v in GRUB_ADD.items()},
    "evidence": ["cmdline"],
}

KERNEL_CMDLINE_FORBIDDEN: CheckText = {
    "title": "Kernel command line lacks the forbidden parameter",
    "fix": {k: v.format(p="<parameter>") for k, v in GRUB_REMOVE.items()},
    "evidence": ["cmdline"],
}

SYSCTL: CheckText = {
    "title": "Kernel tunable is within the profile's bounds",
    "fix": "sysctl -w <key>=<value> and persist it in /etc/sysctl.d/99-gpuconform.conf "
           "(for net.core.bpf_jit_harden use 1)",
    "evidence": ["sysctl"],
}
