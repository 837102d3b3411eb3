"""Typed node facts, read from one probe of the host.

Each fact is one probe section handed to its parser (:mod:`gpuconform.parsers`); this module only
assembles them, once per host (``cached_property``). An accessor either returns a value or raises
``CannotTell`` with the reason the fact could not be read (tool missing, file unreadable, probe
timed out). "Cannot tell" is never "false".
"""
from __future__ import annotations

from functools import cached_property

from gpuconform.errors import CannotTell  # noqa: F401 - the node layer's facts raise it (checks import it here)
from gpuconform.node import probe
from gpuconform.parsers import containerd, dcgm, dkms, host, kernel, kmod, nvidia_smi, systemd
from gpuconform.redact import redact


_EVIDENCE_LINES = 40
#: at most this much of a section's text is shown, and this much of a host's os-release field
#: kept: a 5 MB PRETTY_NAME must not make a 20 MB report
EVIDENCE_BYTES = 16 << 10
FIELD_BYTES = 256


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` bytes of UTF-8, saying how many were cut: ``… (N bytes cut)``."""
    data = text.encode()
    if len(data) <= limit:
        return text
    return data[:limit].decode("utf-8", "ignore") + f"… ({len(data) - limit} bytes cut)"


def _failed(sec: probe.Section, fallback: str = "") -> str:
    """``timed out after N s (…)``, or ``failed: <stderr, else fallback, else the exit code>``."""
    if sec.timed_out_s is not None:
        return sec.failure
    return f"failed: {sec.err.strip() or fallback.strip() or f'exit {sec.rc}'}"


class NodeFacts:
    """Everything the node checks need to know about one host."""

    #: True when ``error`` says the host could not be checked at all (a k8s-node:// probe pod
    #: that never ran): an error, not the host failing to answer.
    could_not_check = False

    def __init__(self, host: str, sections: dict[str, probe.Section], error: str | None = None):
        self.host = host
        self.sections = sections
        self.error = error

    # -- raw access -------------------------------------------------------------------------
    def section(self, name: str) -> probe.Section:
        if self.error:
            raise CannotTell(self.error)
        sec = self.sections.get(name)
        if sec is None:
            raise CannotTell(f"the probe returned no '{name}' section (did it time out?)")
        return sec

    def _file(self, name: str, what: str) -> str:
        sec = self.section(name)
        if not sec.ok:
            raise CannotTell(f"cannot read {what}: {sec.failure}")
        return sec.out

    def evidence(self, *names: str) -> str:
        """The commands behind ``names`` and what they printed, trimmed and redacted."""
        shown = self.__dict__.setdefault("_shown", {})  # per section, redacted once per host
        for name in names:
            if name not in shown:
                shown[name] = self._section_evidence(name)
        return "\n\n".join(shown[name] for name in names if shown[name])

    def _section_evidence(self, name: str) -> str:
        sec = self.sections.get(name)
        if sec is None:
            return ""
        text = "\n".join(x for x in (sec.out, sec.err) if x)
        lines = text.splitlines()
        if len(lines) > _EVIDENCE_LINES:
            lines = lines[:_EVIDENCE_LINES] + [f"... ({len(lines) - _EVIDENCE_LINES} more lines)"]
        status = f"timed out after {sec.timed_out_s} s" if sec.timed_out_s is not None else f"exit {sec.rc}"
        shown = probe.BY_NAME[name].shown if name in probe.BY_NAME else name
        return clip(redact(f"$ {shown}   [{status}]\n" + "\n".join(lines)), EVIDENCE_BYTES)

    # -- tools ------------------------------------------------------------------------------
    @cached_property
    def tools(self) -> dict[str, str]:
        return host.parse_tools(self.section("tools").out)

    def tool(self, name: str) -> str | None:
        """Path of a tool on the host, None when absent."""
        return self.tools.get(name)

    def require_tool(self, name: str, why: str = "") -> str:
        path = self.tool(name)
        if not path:
            raise CannotTell(f"`{name}` is not installed on the host" + (f" ({why})" if why else ""))
        return path

    # -- system -----------------------------------------------------------------------------
    @cached_property
    def kernel_release(self) -> str:
        return self._file("osrelease", "/proc/sys/kernel/osrelease").strip()

    @cached_property
    def os_release(self) -> dict[str, str]:
        fields = kernel.parse_os_release(self._file("os_release", "/etc/os-release"))
        return {k: clip(v, FIELD_BYTES) for k, v in fields.items()}

    @cached_property
    def os_family(self) -> str | None:
        """rhel, debian or suse from /etc/os-release; None when it names none of them or cannot be read."""
        try:
            return kernel.os_family(self.os_release)
        except CannotTell:
            return None

    @cached_property
    def systemd_is_init(self) -> bool:
        return self._file("pid1", "/proc/1/comm").strip() == "systemd"

    @cached_property
    def modules(self) -> dict[str, kmod.Module]:
        return kmod.parse_proc_modules(self._file("proc_modules", "/proc/modules"))

    @cached_property
    def cmdline(self) -> list[tuple[str, str | None]]:
        return kernel.parse_cmdline(self._file("cmdline", "/proc/cmdline"))

    def cmdline_has(self, param: str) -> bool:
        return kernel.cmdline_has(self.cmdline, param)

    @cached_property
    def modprobe_nouveau(self) -> list[tuple[str, list[str]]]:
        return kernel.parse_modprobe_grep(self.section("modprobe_d").out)

    @cached_property
    def initramfs_nouveau(self) -> kernel.InitramfsListing:
        listing = kernel.parse_initramfs(self.section("initramfs").out)
        if listing.tool == "none":
            raise CannotTell("neither lsinitrd nor lsinitramfs is installed on the host: the initramfs cannot be listed")
        return listing

    @cached_property
    def sig_enforce(self) -> bool:
        sec = self.section("sig_enforce")
        # unreadable: a kernel built without CONFIG_MODULE_SIG enforces nothing
        return sec.ok and kernel.parse_sig_enforce(sec.out)

    @cached_property
    def lockdown(self) -> str:
        sec = self.section("lockdown")
        # unreadable: no lockdown LSM (or securityfs not mounted), so no lockdown
        return (kernel.parse_lockdown(sec.out) if sec.ok else None) or "none"

    @cached_property
    def dkms_signing(self) -> dkms.Signing:
        return dkms.parse_signing(self.section("dkms_sign").out)

    @cached_property
    def mok_enrolled(self) -> list[str] | None:
        """Subjects of enrolled MOK keys; None when mokutil is not there to ask."""
        if not self.tool("mokutil"):
            return None
        return self.section("mok_enrolled").out.splitlines()

    @cached_property
    def modinfo_nvidia(self) -> dict[str, str]:
        return kmod.parse_modinfo(self.section("modinfo_nvidia").out)

    @cached_property
    def headers(self) -> kernel.Headers:
        return kernel.parse_headers(self.section("headers").out)

    # -- dkms and toolchain -----------------------------------------------------------------
    @cached_property
    def dkms_entries(self) -> list[dkms.DkmsEntry]:
        self.require_tool("dkms")
        sec = self.section("dkms_status")
        if not sec.ok:
            raise CannotTell(f"`dkms status` {_failed(sec)}")
        return dkms.parse_status(sec.out)

    @cached_property
    def ld(self) -> host.Linker:
        sec = self.section("ld")
        return host.parse_linker(sec.out, sec.err, sec.ok)

    # -- driver -----------------------------------------------------------------------------
    @cached_property
    def driver_proc_version(self) -> nvidia_smi.DriverVersion | None:
        sec = self.section("driver_version")
        return nvidia_smi.parse_proc_version(sec.out) if sec.ok else None

    @cached_property
    def char_devices(self) -> frozenset[str]:
        return host.parse_char_devices(self.section("dev_nodes").out)

    @cached_property
    def smi(self) -> probe.Section:
        return self.section("smi_gpus")

    def _query(self, sec: probe.Section, what: str, parse):
        """A ``nvidia-smi --query-gpu`` section's rows; CannotTell when it failed or cannot be read."""
        if not sec.ok:
            raise CannotTell(f"{what} {_failed(sec, sec.out)}")
        try:
            return parse(sec.out)
        except ValueError as exc:
            raise CannotTell(f"{what} printed what cannot be read: {exc}") from None

    @cached_property
    def gpus(self) -> list[nvidia_smi.GpuRow]:
        rows = self._query(self.smi, "nvidia-smi", nvidia_smi.parse_gpus)
        if not rows:  # no data is not "no GPU is wrong"
            raise CannotTell(f"nvidia-smi exited {self.smi.rc} but listed no GPU")
        return rows

    def _per_gpu(self, step: str, what: str, parse) -> list:
        """One row per GPU nvidia-smi listed, from the query of probe step ``step``."""
        rows = self._query(self.section(step), what, parse)
        missing = sorted({g.index for g in self.gpus} - {r.index for r in rows})
        if missing:
            raise CannotTell(f"{what} printed no row for GPU {', '.join(map(str, missing))}")
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
                raise CannotTell(f"{what} {_failed(sec, sec.out)}")
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
            raise CannotTell(f"dcgmi diag {_failed(sec, sec.out)}" if not sec.ok
                             else f"dcgmi diag printed what cannot be read: {exc}") from None

    @cached_property
    def operator_validations(self) -> host.Validations:
        return host.parse_validations(self.section("validations").out)

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
    def gpu_list(self) -> list[nvidia_smi.ListedGpu]:
        sec = self.section("smi_list")
        return nvidia_smi.parse_list(sec.out) if sec.ok else []

    # -- services and processes -------------------------------------------------------------
    @cached_property
    def units(self) -> dict[str, systemd.Unit]:
        if not self.systemd_is_init:
            raise CannotTell("systemd is not the init system (PID 1) on this host: the unit state cannot be read")
        self.require_tool("systemctl")
        return systemd.parse_show(self.section("systemd_units").out)

    def unit(self, name: str) -> systemd.Unit:
        return self.units.get(name) or systemd.Unit(name)

    @cached_property
    def processes(self) -> frozenset[str]:
        """Process names as the kernel keeps them (/proc/<pid>/comm: at most 15 characters)."""
        return host.parse_processes(self.section("processes").out)

    def process_running(self, name: str) -> bool:
        return name[:15] in self.processes

    @cached_property
    def persistence_without_daemon(self) -> bool:
        """Persistence mode Enabled on every GPU although no nvidia-persistenced runs."""
        try:
            gpus = self.gpus
        except CannotTell:
            return False
        return bool(gpus) and all(g.persistence_mode == "Enabled" for g in gpus) \
            and not self.process_running("nvidia-persistenced")

    @cached_property
    def fabric_manager_packages(self) -> tuple[host.Package, ...]:
        """Every fabric manager package the package manager knows, installed or not."""
        return host.parse_packages(self.section("fm_packages").out)

    # -- container runtime ------------------------------------------------------------------
    @cached_property
    def nvidia_ctk_version(self) -> str | None:
        sec = self.section("nvidia_ctk")
        return host.parse_tool_version(sec.out) if sec.ok else None

    @cached_property
    def _runtime_binaries(self) -> dict[str, host.Binary]:
        return host.parse_binaries(self.section("runtime_binary").out)

    def runtime_binary(self, path: str) -> host.Binary:
        """The nvidia-container-runtime at ``path`` (a path the profile names, so the probe looked)."""
        found = self._runtime_binaries.get(path)
        if found is None:
            raise CannotTell(f"the probe did not look at {path} (not among the profile's runtime binaries)")
        return found

    @cached_property
    def containerd_config(self) -> tuple[containerd.CriRuntimes, str]:
        """(CRI runtimes, where they were read from)."""
        dump = self.section("containerd_dump")
        if self.tool("containerd") and dump.ok:
            return containerd.cri_runtimes(containerd.loads(dump.out, "containerd config dump")), \
                "containerd config dump"
        files = containerd.split_dumped_files(self.section("containerd_files").out)
        if not files:
            why = "containerd is not installed" if not self.tool("containerd") else "config dump failed"
            raise CannotTell(f"{why} and /etc/containerd/config.toml is absent")
        try:
            cfg, unmatched = containerd.merge_files(files)
        except containerd.ConfigError as exc:
            raise CannotTell(str(exc)) from None
        source = " + ".join(files)
        if unmatched:
            source += f" (imports matching nothing: {', '.join(unmatched)})"
        return containerd.cri_runtimes(cfg), source

    @cached_property
    def cdi_specs(self) -> dict[str, str]:
        """CDI spec files in containerd's default spec dirs: {path: kind}."""
        return containerd.parse_cdi_specs(self.section("cdi_specs").out)

    @cached_property
    def nvidia_cdi_specs(self) -> list[str]:
        """The NVIDIA GPU specs among them in the dirs containerd reads (its cdi_spec_dirs)."""
        cri, _source = self.containerd_config
        return containerd.nvidia_gpu_specs(self.cdi_specs, cri.cdi_spec_dirs)

    # -- kernel tunables and log ------------------------------------------------------------
    @cached_property
    def sysctl(self) -> dict[str, str | None]:
        return kernel.parse_sysctl(self.section("sysctl").out)

    @cached_property
    def kernel_log(self) -> kernel.KernelLog:
        log = kernel.parse_kernel_log(self.section("kernel_log").out)
        if log.source == "none":
            raise CannotTell("the kernel log is not readable here (dmesg restricted, no journal)")
        return log
