"""The linker: DKMS cannot build the driver without a working ``ld`` (a linker that lost its run bit
fails every build with ``/bin/ld: Permission denied``)."""
from __future__ import annotations

import dataclasses
from functools import cached_property

from gpuconform.node.topic import Base, CheckText, Companion, Step

STEPS = (
    # bash's `command -v` skips a file without the run bit, so look at /usr/bin/ld as well
    Step("ld", 'p=$(command -v ld) || p=/usr/bin/ld; [ -e "$p" ] || { echo "path="; exit 127; }; echo "path=$p"; '
               'echo "real=$(readlink -f "$p")"; ls -lL "$p"; [ -x "$p" ] && echo "executable=yes" || echo "executable=no"; '
               '$T "$p" --version | head -n 1',
         "command -v ld; ls -lL $(command -v ld); ld --version"),
)
TOOLS = ("ld",)


@dataclasses.dataclass(frozen=True)
class Linker:
    """``ld`` as DKMS will call it: where, whether it has the run bit, whether ``--version`` ran."""
    path: str | None
    real: str | None
    executable: bool
    version: str | None
    runs: bool
    error: str


def parse_linker(out: str, err: str, ok: bool) -> Linker:
    """The ld step's lines (a format only that step makes, so read here): ``path=``, ``real=``,
    ``executable=yes|no``, then ``ld --version``'s first line."""
    info: dict[str, str] = {}
    version = None
    for line in out.splitlines():
        key, eq, value = line.partition("=")
        if eq and key in ("path", "real", "executable"):
            info[key] = value
        elif line.startswith("GNU") or " ld " in f" {line} ":
            version = line
    return Linker(info.get("path") or None, info.get("real") or None, info.get("executable") == "yes",
                  version, ok and version is not None, err.strip())


class Facts(Base):
    @cached_property
    def ld(self) -> Linker:
        sec = self.section("ld")
        return parse_linker(sec.out, sec.err, sec.ok)


COMPANIONS = {
    "node.toolchain.ld_runs": Companion("fix-ld.sh"),
}


# -- the checks' words (their checks: tests/node/test_dkms.py)

TOOLCHAIN_LD_RUNS: CheckText = {
    "title": "The linker runs (DKMS needs it to build the driver)",
    "fix": {"rhel": "ln -sf ld.bfd /usr/bin/ld  (or dnf reinstall binutils)",
            "debian": "apt-get install --reinstall binutils",
            "default": "reinstall binutils so that /usr/bin/ld is an executable linker"},
    "evidence": ["ld"],
}
