"""Plain listings the probe makes of the host: tools on PATH (``name=path``), processes
(``pid comm``), device nodes (``ls -l``), a binary's state (``ls -lL`` + ``<path>: executable``),
installed packages (``name version``), a tool's version. A listing only one step makes (the
linker's, the GPU Operator validator's) is read in that step's topic (gpuconform/node/topics/)."""
from __future__ import annotations

import dataclasses
import re


def parse_tools(text: str) -> dict[str, str]:
    """``name=path`` per tool found on PATH."""
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition("=")
        if k and v:
            out[k] = v
    return out


def parse_processes(text: str) -> frozenset[str]:
    """``pid comm`` lines → process names as the kernel keeps them (/proc/<pid>/comm: 15 characters)."""
    return frozenset(line.split(" ", 1)[1] for line in text.splitlines() if " " in line)


def parse_char_devices(text: str) -> frozenset[str]:
    """``ls -l`` of /dev paths → names of the character devices among them."""
    return frozenset(line.split()[-1].rsplit("/", 1)[-1] for line in text.splitlines() if line.startswith("c"))


@dataclasses.dataclass(frozen=True)
class Binary:
    """A file the probe looked at by path: there or not, executable or not."""
    path: str
    exists: bool
    executable: bool


_BINARY = re.compile(r"^(?P<path>/\S*): (?P<state>executable|not executable|missing)$")


def parse_binaries(text: str) -> dict[str, Binary]:
    """``<path>: executable | not executable | missing`` lines (``ls -lL`` lines between them are evidence)."""
    out = {}
    for line in text.splitlines():
        if m := _BINARY.match(line.strip()):
            out[m["path"]] = Binary(m["path"], m["state"] != "missing", m["state"] == "executable")
    return out


#: dpkg's package states by the second letter of ``${db:Status-Abbrev}`` (dpkg-query(1), field
#: db:Status-Abbrev; dpkg(1), "PACKAGE STATES"). A package removed but not purged is ``config-files``
#: (``rc``) and keeps its old version; one dpkg merely knows of is ``not-installed`` (``un``).
DPKG_STATES = {"n": "not-installed", "c": "config-files", "H": "half-installed", "U": "unpacked",
               "F": "half-configured", "W": "triggers-awaiting", "t": "triggers-pending", "i": "installed"}
#: States whose files are on the host, configured (trigger processing does not change the files).
INSTALLED_STATES = frozenset({"installed", "triggers-awaiting", "triggers-pending"})


@dataclasses.dataclass(frozen=True)
class Package:
    name: str
    version: str
    state: str      # a DPKG_STATES value; rpm lists installed packages only

    @property
    def installed(self) -> bool:
        return self.state in INSTALLED_STATES

    def describe(self) -> str:
        return f"{self.name} {self.version or '(no version)'} ({self.state})"


def parse_packages(text: str) -> tuple[Package, ...]:
    """The probe's package lines: ``rpm NAME VERSION`` (``rpm -qa --qf``: installed packages, every
    installed version of each) and ``dpkg ABBREV NAME [VERSION]`` (``dpkg-query -W -f
    '${db:Status-Abbrev} ...'``: every package dpkg knows, in any state; ABBREV such as ``ii``,
    ``rc``, ``un``, ``iHR``)."""
    packages = []
    for fields in (line.split() for line in text.splitlines()):
        if len(fields) >= 3 and fields[0] == "rpm":
            packages.append(Package(fields[1], fields[2], "installed"))
        elif len(fields) >= 3 and fields[0] == "dpkg":
            abbrev = fields[1]
            state = DPKG_STATES.get(abbrev[1:2], f"unknown state {abbrev}")
            packages.append(Package(fields[2], fields[3] if len(fields) > 3 else "", state))
    return tuple(packages)


def parse_tool_version(text: str) -> str | None:
    """``... version X ...`` (nvidia-ctk --version) → X."""
    m = re.search(r"version\s+(\S+)", text)
    return m.group(1) if m else None
