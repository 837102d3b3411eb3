"""nvidia-smi machine formats: ``--query-gpu ... --format=csv,noheader``, ``-L``, and
/proc/driver/nvidia/version."""
from __future__ import annotations

import re

#: Values nvidia-smi prints when a field has no value; never to be read as one.
NOT_AVAILABLE = {"[N/A]", "N/A", "[Not Supported]", "Not Supported",
                 "[Requested functionality has been deprecated]", "[Unknown Error]", ""}


def parse_query(text: str, fields: tuple[str, ...]) -> list[dict[str, str | None]]:
    """Rows of a ``--format=csv,noheader`` query; unavailable values become None."""
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = [v.strip() for v in line.split(", ")]
        if len(values) != len(fields):
            values = [v.strip() for v in line.split(",")]
        if len(values) != len(fields):
            raise ValueError(f"expected {len(fields)} CSV values, got {len(values)}: {line!r}")
        rows.append({f: (None if v in NOT_AVAILABLE else v) for f, v in zip(fields, values)})
    return rows


_GPU = re.compile(r"^GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)\s*$")
_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[0-9a-fA-F-]+)\)\s*$")


def parse_list(text: str) -> list[dict]:
    """``nvidia-smi -L`` → [{index, name, uuid, mig: [{profile, device, uuid}]}]."""
    gpus: list[dict] = []
    for line in text.splitlines():
        if m := _GPU.match(line):
            gpus.append({"index": int(m[1]), "name": m[2], "uuid": m[3], "mig": []})
        elif (m := _MIG.match(line)) and gpus:
            gpus[-1]["mig"].append({"profile": m[1], "device": int(m[2]), "uuid": m[3]})
    return gpus


_NVRM = re.compile(r"NVRM version:\s+(?P<desc>.*?)\s+(?P<ver>\d+\.\d+(?:\.\d+)?)\s+")


def parse_proc_version(text: str) -> dict[str, str] | None:
    """/proc/driver/nvidia/version → {version, flavour: open|proprietary, line}."""
    m = _NVRM.search(text + " ")
    if not m:
        return None
    flavour = "open" if "Open Kernel Module" in m["desc"] else "proprietary"
    return {"version": m["ver"], "flavour": flavour, "line": text.splitlines()[0].strip()}
