"""nvidia-smi machine formats: ``--query-gpu ... --format=csv,noheader``, ``-L``, and
/proc/driver/nvidia/version."""
from __future__ import annotations

import dataclasses
import re

from gpuconform.parsers._keyed import Keyed

#: Values nvidia-smi prints when a field has no value; never to be read as one.
NOT_AVAILABLE = {"[N/A]", "N/A", "[Not Supported]", "Not Supported",
                 "[Requested functionality has been deprecated]", "[Unknown Error]", ""}

#: nvidia-smi fields read for identity and settings (all exist in 450+ drivers).
GPU_FIELDS = (
    "index", "name", "uuid", "pci.bus_id", "pci.device_id", "driver_version",
    "persistence_mode", "mig.mode.current", "mig.mode.pending", "ecc.mode.current",
)
#: nvidia-smi health fields, queried apart: an older driver rejecting one must not hide the rest.
GPU_HEALTH_FIELDS = (
    "index", "retired_pages.pending", "remapped_rows.pending", "remapped_rows.failure",
)


@dataclasses.dataclass(frozen=True)
class GpuRow(Keyed):
    """One GPU of the identity query (:data:`GPU_FIELDS`); None where nvidia-smi has no value."""
    index: int
    name: str | None
    uuid: str | None
    pci_bus_id: str | None
    pci_device_id: str | None
    driver_version: str | None
    persistence_mode: str | None
    mig_mode_current: str | None
    mig_mode_pending: str | None
    ecc_mode_current: str | None


@dataclasses.dataclass(frozen=True)
class GpuHealth(Keyed):
    """One GPU of the health query (:data:`GPU_HEALTH_FIELDS`): ``Yes``/``No``, None when N/A."""
    index: int
    retired_pages_pending: str | None
    remapped_rows_pending: str | None
    remapped_rows_failure: str | None

    @property
    def tells_memory_health(self) -> bool:
        """Page retirement (before Ampere) or row remapping (Ampere on) has its values here."""
        return self.retired_pages_pending is not None or (
            self.remapped_rows_failure is not None and self.remapped_rows_pending is not None)


@dataclasses.dataclass(frozen=True)
class MigDevice(Keyed):
    profile: str
    device: int
    uuid: str


@dataclasses.dataclass(frozen=True)
class ListedGpu(Keyed):
    """One GPU of ``nvidia-smi -L`` with its MIG devices."""
    index: int
    name: str
    uuid: str
    mig: tuple[MigDevice, ...] = ()


@dataclasses.dataclass(frozen=True)
class DriverVersion(Keyed):
    """/proc/driver/nvidia/version: the loaded kernel module."""
    version: str
    flavour: str        # open | proprietary
    line: str


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


def _typed(cls, text: str, fields: tuple[str, ...]) -> list:
    rows = []
    for row in parse_query(text, fields):
        if not (row["index"] or "").isdigit():
            raise ValueError(f"GPU index {row['index']!r} is not a number")
        rows.append(cls(**{k.replace(".", "_"): (int(v) if k == "index" else v) for k, v in row.items()}))
    return rows


def parse_gpus(text: str) -> list[GpuRow]:
    """The identity query (:data:`GPU_FIELDS`), one row per GPU."""
    return _typed(GpuRow, text, GPU_FIELDS)


def parse_health(text: str) -> list[GpuHealth]:
    """The health query (:data:`GPU_HEALTH_FIELDS`), one row per GPU."""
    return _typed(GpuHealth, text, GPU_HEALTH_FIELDS)


_GPU = re.compile(r"^GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)\s*$")
_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[0-9a-fA-F-]+)\)\s*$")


def parse_list(text: str) -> list[ListedGpu]:
    """``nvidia-smi -L`` → GPUs with their MIG devices."""
    gpus: list[tuple[re.Match, list[MigDevice]]] = []
    for line in text.splitlines():
        if m := _GPU.match(line):
            gpus.append((m, []))
        elif (m := _MIG.match(line)) and gpus:
            gpus[-1][1].append(MigDevice(m[1], int(m[2]), m[3]))
    return [ListedGpu(int(g[1]), g[2], g[3], tuple(migs)) for g, migs in gpus]


_NVRM = re.compile(r"NVRM version:\s+(?P<desc>.*?)\s+(?P<ver>\d+\.\d+(?:\.\d+)?)\s+")


def parse_proc_version(text: str) -> DriverVersion | None:
    """/proc/driver/nvidia/version → version, flavour (open|proprietary) and its first line."""
    m = _NVRM.search(text + " ")
    if not m:
        return None
    flavour = "open" if "Open Kernel Module" in m["desc"] else "proprietary"
    return DriverVersion(m["ver"], flavour, text.splitlines()[0].strip())
