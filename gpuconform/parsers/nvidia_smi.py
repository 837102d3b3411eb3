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


#: The PCIe link, queried apart (nvidia-smi --help-query-gpu, driver 580): gen/width ``current``
#: "may be reduced when the GPU is not in use", ``max`` is what the GPU and the system allow
#: together; the idle limiter says whether the GPU is in use. ``clocks_throttle_reasons.*`` are
#: the older names of ``clocks_event_reasons.*``: drivers before the rename answer them too.
PCIE_FIELDS = ("index", "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current",
               "pcie.link.width.max", "clocks_throttle_reasons.gpu_idle")
#: Clock limiters that mean trouble (--help-query-gpu: HW slowdown, HW thermal slowdown, HW power
#: brake, SW thermal slowdown), by their short names; idle, the SW power cap, application clocks
#: and sync boost are normal operation and not queried.
CLOCK_EVENTS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
CLOCK_FIELDS = ("index", *(f"clocks_throttle_reasons.{e}" for e in CLOCK_EVENTS))
#: Memory error counters: rows remapped for uncorrectable errors (Ampere on) and SRAM ECC errors
#: since the GPU was made (aggregate).
MEMORY_ERROR_FIELDS = ("index", "remapped_rows.uncorrectable", "ecc.errors.uncorrected.aggregate.sram",
                       "ecc.errors.corrected.aggregate.sram")


@dataclasses.dataclass(frozen=True)
class GpuPcie(Keyed):
    """One GPU of the PCIe query (:data:`PCIE_FIELDS`); None where nvidia-smi has no value (a VM
    may not pass them through)."""
    index: int
    pcie_link_gen_current: str | None
    pcie_link_gen_max: str | None
    pcie_link_width_current: str | None
    pcie_link_width_max: str | None
    clocks_throttle_reasons_gpu_idle: str | None

    @property
    def idle(self) -> bool:
        return self.clocks_throttle_reasons_gpu_idle == "Active"


@dataclasses.dataclass(frozen=True)
class GpuClocks(Keyed):
    """One GPU of the clock limiter query (:data:`CLOCK_FIELDS`): ``Active``/``Not Active``."""
    index: int
    clocks_throttle_reasons_hw_slowdown: str | None
    clocks_throttle_reasons_hw_thermal_slowdown: str | None
    clocks_throttle_reasons_hw_power_brake_slowdown: str | None
    clocks_throttle_reasons_sw_thermal_slowdown: str | None

    def active(self) -> list[str]:
        """The limiters of :data:`CLOCK_EVENTS` engaged now."""
        return [e for e in CLOCK_EVENTS if getattr(self, f"clocks_throttle_reasons_{e}") == "Active"]


@dataclasses.dataclass(frozen=True)
class GpuMemoryErrors(Keyed):
    """One GPU of the memory error query (:data:`MEMORY_ERROR_FIELDS`); None where not supported."""
    index: int
    remapped_rows_uncorrectable: str | None
    ecc_errors_uncorrected_aggregate_sram: str | None
    ecc_errors_corrected_aggregate_sram: str | None


@dataclasses.dataclass(frozen=True)
class NvLink(Keyed):
    """One NVLink of one GPU: ``nvidia-smi nvlink -s`` (speed, or None when ``<inactive>``) and
    ``-e`` (its error counters by name: Replay, Recovery, CRC)."""
    gpu: int
    link: int
    speed: str | None
    errors: tuple[tuple[str, int], ...] = ()


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


def parse_pcie(text: str) -> list[GpuPcie]:
    return _typed(GpuPcie, text, PCIE_FIELDS)


def parse_clocks(text: str) -> list[GpuClocks]:
    return _typed(GpuClocks, text, CLOCK_FIELDS)


def parse_memory_errors(text: str) -> list[GpuMemoryErrors]:
    return _typed(GpuMemoryErrors, text, MEMORY_ERROR_FIELDS)


_LINK_GPU = re.compile(r"^GPU (\d+): ")
_LINK = re.compile(r"^\s+Link (\d+): (.+?)\s*$")
_LINK_ERROR = re.compile(r"^(\w+) Errors: (\d+)$")


def parse_nvlink(status: str, errors: str = "") -> list[NvLink]:
    """``nvidia-smi nvlink -s`` (``GPU 0: NAME (UUID: …)`` then a tab-indented ``Link 0: 26.562
    GB/s`` or ``Link 3: <inactive>`` per link) with the counters of ``nvidia-smi nvlink -e`` (``Link 0:
    Replay Errors: 0``, ``Recovery Errors``, ``CRC Errors``). A GPU without NVLink lists no link."""
    def per_link(text: str):
        gpu = None
        for line in text.splitlines():
            if m := _LINK_GPU.match(line):
                gpu = int(m[1])
            elif (m := _LINK.match(line)) and gpu is not None:
                yield gpu, int(m[1]), m[2]
    counters: dict[tuple[int, int], list[tuple[str, int]]] = {}
    for gpu, link, value in per_link(errors):
        if m := _LINK_ERROR.match(value):
            counters.setdefault((gpu, link), []).append((m[1], int(m[2])))
    return [NvLink(gpu, link, None if "inactive" in value.lower() else value, tuple(counters.get((gpu, link), ())))
            for gpu, link, value in per_link(status)]


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


_VERSION_LINE = re.compile(r"^\s*(\d+\.\d+(?:\.\d+)?)\s*$")
_CUDA_VERSION = re.compile(r"CUDA Version:\s*(\d+\.\d+(?:\.\d+)?)")


def parse_driver_and_cuda(text: str) -> tuple[str | None, str | None]:
    """(driver, CUDA) a container's nvidia-smi reported: the first line that is a version alone
    (``--query-gpu=driver_version --format=csv,noheader``) and ``CUDA Version:`` of its header;
    None for what it did not print (e.g. "Failed to initialize NVML: Driver/library version mismatch")."""
    driver = next((m[1] for line in text.splitlines() if (m := _VERSION_LINE.match(line))), None)
    cuda = _CUDA_VERSION.search(text)
    return driver, cuda[1] if cuda else None
