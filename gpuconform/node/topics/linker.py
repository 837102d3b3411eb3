"""The linker: DKMS cannot build the driver without a working ``ld`` (a linker that lost its run bit
fails every build with ``/bin/ld: Permission denied``)."""
from __future__ import annotations

from functools import cached_property

from gpuconform.node.topic import Base, CheckText, Companion, Step
from gpuconform.parsers import host

STEPS = (
    # bash's `command -v` skips a file without the run bit, so look at /usr/bin/ld as well
    Step("ld", 'p=$(command -v ld) || p=/usr/bin/ld; [ -e "$p" ] || { echo "path="; exit 127; }; echo "path=$p"; '
               'echo "real=$(readlink -f "$p")"; ls -lL "$p"; [ -x "$p" ] && echo "executable=yes" || echo "executable=no"; '
               '$T "$p" --version | head -n 1',
         "command -v ld; ls -lL $(command -v ld); ld --version"),
)
TOOLS = ("ld",)


class Facts(Base):
    @cached_property
    def ld(self) -> host.Linker:
        sec = self.section("ld")
        return host.parse_linker(sec.out, sec.err, sec.ok)


COMPANIONS = {
    "node.toolchain.ld_runs": Companion("fix-ld.sh"),
}


# -- the checks' words (their checks: tests/node/test_dkms.py)

TOOLCHAIN_LD_RUNS: CheckText = {
    "title": "The linker runs (DKMS needs it to build the driver)",
    "fix": {"rhel": "remediation/fix-ld.sh --apply  (ln -sf ld.bfd /usr/bin/ld; or dnf reinstall binutils)",
            "debian": "apt-get install --reinstall binutils",
            "default": "reinstall binutils so that /usr/bin/ld is an executable linker"},
    "evidence": ["ld"],
}
