"""Typed node facts, read from one probe of the host.

An accessor either returns a value or raises ``CannotTell`` with the reason the fact could not
be read (tool missing, file unreadable, probe timed out). "Cannot tell" is never "false".
"""
from __future__ import annotations

import functools
import re

from gpuconform.node import probe
from gpuconform.parsers import containerd, dkms, kernel, kmod, nvidia_smi, systemd


class CannotTell(Exception):
    """A fact that could not be read; str() says why. Reported as "could not check"."""


#: What each probe section ran, as shown in evidence.
SHOWN = {
    "osrelease": "cat /proc/sys/kernel/osrelease",
    "os_release": "cat /etc/os-release",
    "pid1": "cat /proc/1/comm",
    "tools": "command -v " + " ".join(probe.TOOLS),
    "proc_modules": "cat /proc/modules",
    "cmdline": "cat /proc/cmdline",
    "modprobe_d": "grep -H -i nouveau /etc/modprobe.d/*.conf /usr/lib/modprobe.d/*.conf ...",
    "initramfs": "lsinitrd /boot/initramfs-$(uname -r).img | grep -i nouveau  (or lsinitramfs)",
    "sig_enforce": "cat /sys/module/module/parameters/sig_enforce",
    "lockdown": "cat /sys/kernel/security/lockdown",
    "secure_boot": "mokutil --sb-state",
    "dkms_sign": "ls /var/lib/dkms/mok.{key,pub}; grep mok_ /etc/dkms/framework.conf",
    "mok_enrolled": "mokutil --list-enrolled",
    "modinfo_nvidia": "modinfo nvidia",
    "headers": "readlink -f /lib/modules/$(uname -r)/build",
    "dkms_version": "dkms --version",
    "dkms_status": "dkms status",
    "ld": "command -v ld; ls -lL $(command -v ld); ld --version",
    "driver_version": "cat /proc/driver/nvidia/version",
    "dev_nodes": "ls -l /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia[0-9]*",
    "smi_gpus": "nvidia-smi --query-gpu=" + ",".join(probe.GPU_FIELDS) + " --format=csv,noheader",
    "smi_health": "nvidia-smi --query-gpu=" + ",".join(probe.GPU_HEALTH_FIELDS) + " --format=csv,noheader",
    "smi_list": "nvidia-smi -L",
    "systemd_units": "systemctl show -p Id,LoadState,ActiveState,SubState,UnitFileState "
                     "nvidia-persistenced nvidia-fabricmanager containerd",
    "processes": "cat /proc/[0-9]*/comm",
    "fm_packages": "rpm -qa 'nvidia-fabric*manager*' || dpkg-query -W 'nvidia-fabricmanager*'",
    "fm_version": "nv-fabricmanager --version",
    "nvidia_ctk": "nvidia-ctk --version",
    "runtime_binary": "ls -lL /usr/bin/nvidia-container-runtime",
    "containerd_dump": "containerd config dump",
    "containerd_files": "cat " + probe.CONTAINERD_FILES,
    "sysctl": "cat /proc/sys/<key>",
    "kernel_log": "dmesg | grep 'NVRM: Xid'  (or journalctl -k -b)",
}

_EVIDENCE_LINES = 40


def _failed(sec: probe.Section, fallback: str = "") -> str:
    """``timed out after N s (…)``, or ``failed: <stderr, else fallback, else the exit code>``."""
    if sec.timed_out_s is not None:
        return sec.failure
    return f"failed: {sec.err.strip() or fallback.strip() or f'exit {sec.rc}'}"


def cached(fn):
    return property(functools.cache(fn))


class NodeFacts:
    """Everything the node checks need to know about one host."""

    def __init__(self, host: str, sections: dict[str, probe.Section], error: str | None = None):
        self.host = host
        self.sections = sections
        self.error = error

    def __hash__(self) -> int:
        return id(self)

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

    def tool(self, name: str) -> str | None:
        """Path of a tool on the host, None when absent."""
        return self.tools.get(name)

    @cached
    def tools(self) -> dict[str, str]:
        out = {}
        for line in self.section("tools").out.splitlines():
            k, _, v = line.partition("=")
            if k and v:
                out[k] = v
        return out

    def require_tool(self, name: str, why: str = "") -> str:
        path = self.tool(name)
        if not path:
            raise CannotTell(f"`{name}` is not installed on the host" + (f" ({why})" if why else ""))
        return path

    def evidence(self, *names: str) -> str:
        """The commands behind ``names`` and what they printed, trimmed."""
        parts = []
        for name in names:
            sec = self.sections.get(name)
            if sec is None:
                continue
            text = "\n".join(x for x in (sec.out, sec.err) if x)
            lines = text.splitlines()
            if len(lines) > _EVIDENCE_LINES:
                lines = lines[:_EVIDENCE_LINES] + [f"... ({len(lines) - _EVIDENCE_LINES} more lines)"]
            status = f"timed out after {sec.timed_out_s} s" if sec.timed_out_s is not None else f"exit {sec.rc}"
            parts.append(f"$ {SHOWN.get(name, name)}   [{status}]\n" + "\n".join(lines))
        return "\n\n".join(parts)

    # -- system -----------------------------------------------------------------------------
    @cached
    def kernel_release(self) -> str:
        return self._file("osrelease", "/proc/sys/kernel/osrelease").strip()

    @cached
    def os_release(self) -> dict[str, str]:
        return kernel.parse_os_release(self._file("os_release", "/etc/os-release"))

    @cached
    def os_family(self) -> str | None:
        try:
            return kernel.os_family(self.os_release)
        except CannotTell:
            return None

    @cached
    def systemd_is_init(self) -> bool:
        return self._file("pid1", "/proc/1/comm").strip() == "systemd"

    @cached
    def modules(self) -> dict[str, kmod.Module]:
        return kmod.parse_proc_modules(self._file("proc_modules", "/proc/modules"))

    @cached
    def cmdline(self) -> list[tuple[str, str | None]]:
        return kernel.parse_cmdline(self._file("cmdline", "/proc/cmdline"))

    def cmdline_has(self, param: str) -> bool:
        return kernel.cmdline_has(self.cmdline, param)

    @cached
    def modprobe_nouveau(self) -> list[tuple[str, list[str]]]:
        return kernel.parse_modprobe_grep(self.section("modprobe_d").out)

    @cached
    def initramfs_nouveau(self) -> tuple[str, list[str]]:
        """(tool used, nouveau module files in the initramfs listing).

        The listing also names /etc/modprobe.d/blacklist-nouveau.conf, which dracut and
        initramfs-tools copy in: only nouveau.ko[.xz|.zst|.gz] counts."""
        sec = self.section("initramfs")
        lines = sec.out.splitlines()
        tool = lines[0].partition("=")[2] if lines and lines[0].startswith("tool=") else "none"
        if tool == "none":
            raise CannotTell("neither lsinitrd nor lsinitramfs is installed on the host: the initramfs cannot be listed")
        return tool, [x for x in lines[1:] if re.search(r"(^|/)nouveau\.ko(\.\w+)?\s*$", x.split()[-1] if x.split() else "")]

    @cached
    def sig_enforce(self) -> bool:
        sec = self.section("sig_enforce")
        if not sec.ok:  # kernel built without CONFIG_MODULE_SIG: nothing is enforced
            return False
        return sec.out.strip().upper().startswith("Y")

    @cached
    def lockdown(self) -> str:
        sec = self.section("lockdown")
        if not sec.ok:  # no lockdown LSM (or securityfs not mounted): no lockdown
            return "none"
        return kernel.parse_lockdown(sec.out) or "none"

    @cached
    def dkms_signing(self) -> dict:
        """DKMS's module signing setup: key files present and framework.conf settings."""
        lines = self.section("dkms_sign").out.splitlines()
        files = [x for x in lines if x.startswith("/")]
        conf = dict(x.strip().split("=", 1) for x in lines if "=" in x and not x.startswith("/"))
        return {"key_files": files, "conf": conf}

    @cached
    def mok_enrolled(self) -> list[str] | None:
        """Subjects of enrolled MOK keys; None when mokutil is not there to ask."""
        if not self.tool("mokutil"):
            return None
        return self.section("mok_enrolled").out.splitlines()

    @cached
    def modinfo_nvidia(self) -> dict[str, str]:
        sec = self.section("modinfo_nvidia")
        out = {}
        for line in sec.out.splitlines():
            k, _, v = line.partition(":")
            out[k.strip()] = v.strip()
        return out

    @cached
    def headers(self) -> tuple[str, str]:
        """('present'|'dangling'|'absent', path)."""
        state, _, path = self.section("headers").out.strip().partition(" ")
        return state, path

    # -- dkms and toolchain -----------------------------------------------------------------
    @cached
    def dkms_entries(self) -> list[dkms.DkmsEntry]:
        self.require_tool("dkms")
        sec = self.section("dkms_status")
        if not sec.ok:
            raise CannotTell(f"`dkms status` {_failed(sec)}")
        return dkms.parse_status(sec.out)

    @cached
    def ld(self) -> dict:
        sec = self.section("ld")
        info: dict = {"runs": False, "error": sec.err.strip()}
        for line in sec.out.splitlines():
            if "=" in line and line.split("=", 1)[0] in ("path", "real", "executable"):
                k, v = line.split("=", 1)
                info[k] = v
            elif line.startswith("GNU") or " ld " in f" {line} ":
                info["version"] = line
        info["runs"] = sec.ok and "version" in info
        return info

    # -- driver -----------------------------------------------------------------------------
    @cached
    def driver_proc_version(self) -> dict[str, str] | None:
        sec = self.section("driver_version")
        return nvidia_smi.parse_proc_version(sec.out) if sec.ok else None

    @cached
    def char_devices(self) -> set[str]:
        names = set()
        for line in self.section("dev_nodes").out.splitlines():
            if line.startswith("c"):
                names.add(line.split()[-1].rsplit("/", 1)[-1])
        return names

    @cached
    def smi(self) -> probe.Section:
        return self.section("smi_gpus")

    @cached
    def gpus(self) -> list[dict[str, str | None]]:
        sec = self.smi
        if not sec.ok:
            raise CannotTell(f"nvidia-smi {_failed(sec, sec.out)}")
        return nvidia_smi.parse_query(sec.out, probe.GPU_FIELDS)

    @cached
    def gpu_health(self) -> list[dict[str, str | None]]:
        sec = self.section("smi_health")
        if not sec.ok:
            raise CannotTell(f"nvidia-smi health query {_failed(sec, sec.out)}")
        return nvidia_smi.parse_query(sec.out, probe.GPU_HEALTH_FIELDS)

    @cached
    def gpu_list(self) -> list[dict]:
        sec = self.section("smi_list")
        return nvidia_smi.parse_list(sec.out) if sec.ok else []

    # -- services and processes -------------------------------------------------------------
    @cached
    def units(self) -> dict[str, dict[str, str]]:
        if not self.systemd_is_init:
            raise CannotTell("systemd is not the init system (PID 1) on this host: the unit state cannot be read")
        self.require_tool("systemctl")
        return systemd.parse_show(self.section("systemd_units").out)

    def unit(self, name: str) -> dict[str, str]:
        return self.units.get(name, {"Id": name, "LoadState": "not-found",
                                     "ActiveState": "inactive", "UnitFileState": ""})

    @cached
    def processes(self) -> set[str]:
        """Process names as the kernel keeps them (/proc/<pid>/comm: at most 15 characters)."""
        return {line.split(" ", 1)[1] for line in self.section("processes").out.splitlines() if " " in line}

    def process_running(self, name: str) -> bool:
        return name[:15] in self.processes

    @cached
    def persistence_without_daemon(self) -> bool:
        """Persistence mode Enabled on every GPU although no nvidia-persistenced runs."""
        try:
            gpus = self.gpus
        except CannotTell:
            return False
        return bool(gpus) and all(g["persistence_mode"] == "Enabled" for g in gpus) \
            and not self.process_running("nvidia-persistenced")

    @cached
    def fabric_manager_packages(self) -> list[tuple[str, str]]:
        return [tuple(line.split()[:2]) for line in self.section("fm_packages").out.splitlines()
                if len(line.split()) >= 2]

    # -- container runtime ------------------------------------------------------------------
    @cached
    def nvidia_ctk_version(self) -> str | None:
        sec = self.section("nvidia_ctk")
        m = re.search(r"version\s+(\S+)", sec.out)
        return m.group(1) if sec.ok and m else None

    @cached
    def runtime_binary(self) -> dict:
        sec = self.section("runtime_binary")
        return {"exists": sec.ok, "executable": "executable=yes" in sec.out}

    @cached
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

    # -- kernel tunables and log ------------------------------------------------------------
    @cached
    def sysctl(self) -> dict[str, str | None]:
        out = {}
        for line in self.section("sysctl").out.splitlines():
            k, _, v = line.partition("=")
            out[k] = None if v == "?" else v.strip()
        return out

    @cached
    def xids(self) -> tuple[str, list[tuple[int, str]]]:
        """(log source, Xid events since boot)."""
        lines = self.section("kernel_log").out.splitlines()
        source = lines[0].partition("=")[2] if lines and lines[0].startswith("source=") else "none"
        if source == "none":
            raise CannotTell("the kernel log is not readable here (dmesg restricted, no journal)")
        return source, kernel.parse_xids("\n".join(lines[1:]))
