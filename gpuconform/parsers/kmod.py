"""/proc/modules (format: ``name size refcount deps, state 0xADDR [(taints)]``)."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Module:
    name: str
    size: int
    refcount: int | None
    deps: tuple[str, ...]
    state: str
    taints: str


def parse_proc_modules(text: str) -> dict[str, Module]:
    mods: dict[str, Module] = {}
    for line in text.splitlines():
        f = line.split()
        if len(f) < 5:
            continue
        deps = () if f[3] == "-" else tuple(d for d in f[3].split(",") if d)
        taints = f[6].strip("()") if len(f) > 6 else ""
        mods[f[0]] = Module(f[0], int(f[1]) if f[1].isdigit() else 0,
                            int(f[2]) if f[2].lstrip("-").isdigit() else None, deps, f[4], taints)
    return mods


def parse_modinfo(text: str) -> dict[str, str]:
    """``modinfo`` ``field: value`` lines (the probe keeps version, license, signer, sig_key,
    vermagic, filename) → {field: value}."""
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        out[k.strip()] = v.strip()
    return out
