"""``dkms status`` in every form met in the field.

dkms 3.x: ``nvidia/580.95.05, 6.12.21.red80.x86_64, x86_64: installed``
dkms 2.x: ``nvidia, 580.95.05, 6.12.21.red80.x86_64, x86_64: installed``
source only: ``nvidia/580.95.05: added`` (2.x: ``nvidia, 580.95.05: added``)
a note may follow the state: ``installed (WARNING! Diff between built and installed module!)``;
RHEL weak-modules: ``installed-weak from 6.12.20...``; newer dkms knows ``broken``.
"""
from __future__ import annotations

import dataclasses
import re

_LINE = re.compile(r"^(?P<head>[^:]+):\s*(?P<state>[A-Za-z][\w-]*)(?P<rest>.*)$")


@dataclasses.dataclass(frozen=True)
class DkmsEntry:
    module: str
    version: str
    kernel: str | None
    arch: str | None
    state: str
    note: str
    line: str


def parse_status(text: str) -> list[DkmsEntry]:
    entries = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.lower().startswith(("warning", "error", "deprecated")):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        head = [p.strip() for p in m["head"].split(",")]
        if "/" in head[0]:
            module, version = head[0].split("/", 1)
            rest = head[1:]
        elif len(head) >= 2:
            module, version, rest = head[0], head[1], head[2:]
        else:
            continue
        kernel = rest[0] if rest else None
        arch = rest[1] if len(rest) > 1 else None
        entries.append(DkmsEntry(module, version, kernel, arch, m["state"].lower(),
                                 m["rest"].strip(" ()"), line))
    return entries


def parse_version(text: str) -> str | None:
    """``dkms --version`` → ``3.0.11`` (prints ``dkms-3.0.11`` or ``dkms: 2.8.1``)."""
    m = re.search(r"(\d+\.\d+(?:\.\d+)*)", text)
    return m.group(1) if m else None


@dataclasses.dataclass(frozen=True)
class Signing:
    """DKMS's module signing setup: key files present and framework.conf settings."""
    key_files: tuple[str, ...]
    conf: dict[str, str]

    @property
    def has_key(self) -> bool:
        return bool(self.key_files) or "mok_signing_key" in self.conf


def parse_signing(text: str) -> Signing:
    """Readable key files (absolute paths) and ``mok_signing_key=...`` style framework.conf lines."""
    lines = text.splitlines()
    conf = dict(x.strip().split("=", 1) for x in lines if "=" in x and not x.startswith("/"))
    return Signing(tuple(x for x in lines if x.startswith("/")), conf)
