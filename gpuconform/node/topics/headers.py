"""Kernel headers for the running kernel: what DKMS builds the driver against."""
from __future__ import annotations

from functools import cached_property

from gpuconform.node.topic import Base, CheckText, Companion, Step
from gpuconform.parsers import kernel

STEPS = (
    Step("headers", 'b="/lib/modules/$kver/build"; if [ -e "$b" ]; then echo "present $(readlink -f "$b")"; '
                    'elif [ -L "$b" ]; then echo "dangling $(readlink "$b")"; else echo "absent $b"; fi',
         "readlink -f /lib/modules/$(uname -r)/build"),
)
TOOLS: tuple[str, ...] = ()


class Facts(Base):
    @cached_property
    def headers(self) -> kernel.Headers:
        return kernel.parse_headers(self.section("headers").out)


COMPANIONS = {
    "node.kernel.headers": Companion("kernel-headers.sh", lambda facts, expected, param:
                                     (("KERNEL", facts.kernel_release),)),
}


# -- the checks' words (their checks: tests/node/test_kernel.py)

KERNEL_HEADERS: CheckText = {
    "title": "Kernel headers/devel for the RUNNING kernel are installed",
    "fix": {"rhel": "comment out `exclude=kernel*` in /etc/dnf/dnf.conf, then "
                    "dnf install kernel-devel-$(uname -r)  (kernel-lt-devel-$(uname -r) on RED OS)",
            "debian": "apt-get install linux-headers-$(uname -r)",
            "default": "install the headers package of the running kernel"},
    "evidence": ["osrelease", "headers"],
}
