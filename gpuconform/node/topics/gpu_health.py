"""GPU health: memory (retired pages, row remapping, ECC errors), PCIe link, clock limiters, NVLink,
Xid errors in the kernel log, and the opt-in DCGM diagnostic."""
from __future__ import annotations

from functools import cached_property

from gpuconform.errors import CannotTell
from gpuconform.node.topic import Base, CheckText, Step, failed, query_step
from gpuconform.parsers import dcgm, kernel, nvidia_smi

STEPS = (
    query_step("smi_health", nvidia_smi.GPU_HEALTH_FIELDS),
    query_step("smi_pcie", nvidia_smi.PCIE_FIELDS),
    query_step("smi_clocks", nvidia_smi.CLOCK_FIELDS),
    query_step("smi_memory_errors", nvidia_smi.MEMORY_ERROR_FIELDS),
    Step("nvlink_status", "$T nvidia-smi nvlink -s", "nvidia-smi nvlink -s"),
    Step("nvlink_errors", "$T nvidia-smi nvlink -e", "nvidia-smi nvlink -e"),
    # opt-in only (health.dcgm_diag): the diagnostic loads the GPU; -j prints its per-test results
    Step("dcgm_diag", '[ -n "$GPUC_DCGM" ] || { echo "not asked"; exit 0; }; '
                      'command -v dcgmi >/dev/null 2>&1 || { echo "no dcgmi"; exit 0; }; $T dcgmi diag -r "$GPUC_DCGM" -j',
         "dcgmi diag -r <health.dcgm_diag> -j"),
    # both sources stamp lines with seconds since boot (dmesg; journal -o short-monotonic), set
    # against /proc/uptime for the profile's time window
    Step("kernel_log", 'up="uptime=$(cut -d" " -f1 /proc/uptime 2>/dev/null)"; '
                       'if dmesg >/dev/null 2>&1; then echo "source=dmesg"; echo "$up"; dmesg | grep -E "NVRM: Xid"; '
                       'elif command -v journalctl >/dev/null 2>&1 && journalctl -k -b -n 1 >/dev/null 2>&1; then '
                       'echo "source=journal"; echo "$up"; journalctl -k -b --no-pager -o short-monotonic | grep -E "NVRM: Xid"; '
                       'else echo "source=none"; fi; true',
         "dmesg | grep 'NVRM: Xid'  (or journalctl -k -b -o short-monotonic); cat /proc/uptime"),
)
TOOLS = ("dmesg", "journalctl")
COMPANIONS: dict = {}


class Facts(Base):
    @cached_property
    def gpu_health(self) -> list[nvidia_smi.GpuHealth]:
        """One row per GPU of the identity query, each telling its memory health: retired pages
        (before Ampere) or row remapping (failure and pending). No data is not "healthy"."""
        what = "nvidia-smi health query"
        rows = self._per_gpu("smi_health", what, nvidia_smi.parse_health)
        silent = [r.index for r in rows if not r.tells_memory_health]
        if silent:
            raise CannotTell(f"{what} gave no value for retired_pages.pending nor remapped_rows.failure/"
                             f"pending on GPU {', '.join(map(str, silent))}")
        return rows

    @cached_property
    def gpu_pcie(self) -> list[nvidia_smi.GpuPcie]:
        return self._per_gpu("smi_pcie", "nvidia-smi PCIe query", nvidia_smi.parse_pcie)

    @cached_property
    def gpu_clocks(self) -> list[nvidia_smi.GpuClocks]:
        return self._per_gpu("smi_clocks", "nvidia-smi clock limiter query", nvidia_smi.parse_clocks)

    @cached_property
    def gpu_memory_errors(self) -> list[nvidia_smi.GpuMemoryErrors]:
        return self._per_gpu("smi_memory_errors", "nvidia-smi memory error query", nvidia_smi.parse_memory_errors)

    @cached_property
    def nvlinks(self) -> list[nvidia_smi.NvLink]:
        """Every NVLink of every GPU (none on a GPU without NVLink), with its error counters."""
        status, errors = self.section("nvlink_status"), self.section("nvlink_errors")
        for sec, what in ((status, "nvidia-smi nvlink -s"), (errors, "nvidia-smi nvlink -e")):
            if not sec.ok:
                raise CannotTell(f"{what} {failed(sec, sec.out)}")
        return nvidia_smi.parse_nvlink(status.out, errors.out)

    @cached_property
    def dcgm_diag(self) -> list[dcgm.DiagResult] | None:
        """The DCGM diagnostic's results; None when dcgmi is not installed."""
        sec = self.section("dcgm_diag")
        if sec.ok and sec.out.strip() == "no dcgmi":
            return None
        if sec.ok and sec.out.strip() == "not asked":
            raise CannotTell("the probe did not run the DCGM diagnostic (no profile section of this host asks for it)")
        try:  # dcgmi exits non-zero when a test fails: its JSON still says which
            return dcgm.parse_diag(sec.out)
        except ValueError as exc:
            raise CannotTell(f"dcgmi diag {failed(sec, sec.out)}" if not sec.ok
                             else f"dcgmi diag printed what cannot be read: {exc}") from None

    @cached_property
    def kernel_log(self) -> kernel.KernelLog:
        log = kernel.parse_kernel_log(self.section("kernel_log").out)
        if log.source == "none":
            raise CannotTell("the kernel log is not readable here (dmesg restricted, no journal)")
        return log


# -- the checks' words (their checks: tests/node/test_gpu_health.py, test_kernel.py)
RMA = "drain the node, run `nvidia-smi -q -d PAGE_RETIREMENT,ROW_REMAPPER`, reset the GPU; if it persists, RMA"

GPU_ECC_ENABLED: CheckText = {
    "title": "ECC is enabled on every GPU",
    "fix": "nvidia-smi -i <gpu> -e 1, then reset the GPU or reboot",
    "evidence": ["smi_gpus"],
}

GPU_RETIRED_PAGES: CheckText = {
    "title": "No retired memory pages are pending",
    "fix": RMA,
    "evidence": ["smi_health"],
}

GPU_ROW_REMAP: CheckText = {
    "title": "No row-remap failure or pending row remap",
    "fix": RMA,
    "evidence": ["smi_health"],
}

GPU_PCIE_LINK: CheckText = {
    "title": "Every GPU's PCIe link runs at its full width and generation",
    "fix": "drain the node; reseat the GPU or its riser, check the slot's BIOS link settings and "
           "`lspci -vv -s <bus id>` LnkSta against LnkCap; if the link trains down again, RMA",
    "evidence": ["smi_pcie"],
}

GPU_CLOCK_EVENTS: CheckText = {
    "title": "No GPU is slowed down by hardware, thermal or power-brake limits",
    "fix": "check cooling (nvidia-smi -q -d TEMPERATURE,PERFORMANCE), the PSUs and the BMC's power "
           "brake events; drain the node until the limiter clears",
    "evidence": ["smi_clocks"],
}

GPU_MEMORY_ERRORS: CheckText = {
    "title": "Memory error counters are within the profile's limits",
    "fix": RMA,
    "evidence": ["smi_memory_errors"],
}

GPU_NVLINK: CheckText = {
    "title": "Every NVLink is up, its error counters within the profile's limits",
    "fix": "drain the node; check the fabric manager (journalctl -u nvidia-fabricmanager) and "
           "`nvidia-smi nvlink -e`; reset the GPUs; if a link stays down or keeps erring, RMA the GPU or baseboard",
    "evidence": ["nvlink_status", "nvlink_errors"],
}

GPU_DCGM_DIAG: CheckText = {
    "title": "DCGM diagnostics pass (opt-in: it loads the GPU)",
    "fix": "read the failing test's info in the evidence; `dcgmi diag -r 3` for detail; drain the node and RMA "
           "the GPU if a hardware test fails again",
    "evidence": ["dcgm_diag"],
}

KERNEL_NO_XID: CheckText = {
    "title": "No NVIDIA Xid error in the kernel log (since boot or the profile's window)",
    "fix": "each Xid's class and action are in the message (gpuconform/node/xid.py); anything else: NVIDIA's "
           "Xid catalogue. Hardware Xids: drain the node, collect nvidia-bug-report.sh, reset or replace the GPU.",
    "evidence": ["kernel_log"],
}
