"""What a simulated GPU host *is*, as data: kernel, modules, GPUs, units, packages, files.

The renderer (:mod:`testbed.hosts.rootfs`) derives what the host *shows* from it (``/proc``,
``/dev``, the answers of ``nvidia-smi``, ``dkms``, ``systemctl`` ...).
"""
from __future__ import annotations

import copy
import dataclasses
import uuid

DRIVER = "580.95.05"
OTHER_DRIVER = "580.82.07"
KERNEL = "6.12.21.red80.x86_64"
OLDER_KERNEL = "6.12.20.red80.x86_64"
DEBIAN_KERNEL = "5.15.0-139-generic"
H100 = "NVIDIA H100 80GB HBM3"
H100_DEVICE_ID = "0x233010DE"
H100_PCIE = "NVIDIA H100 PCIe"
H100_PCIE_DEVICE_ID = "0x233110DE"
#: PCI bus of each GPU on an HGX H100 8-GPU baseboard (index order).
HGX_BUSES = ("18", "2A", "3A", "5D", "9A", "AB", "BA", "DB")
BLACKLIST_NOUVEAU = (
    "blacklist nouveau\nblacklist lbm-nouveau\noptions nouveau modeset=0\n"
    "alias nouveau off\nalias lbm-nouveau off\n"
)


def stable_uuid(kind: str, *parts: object) -> str:
    """Stable, realistic-looking UUIDs (same hardware in every scenario)."""
    return f"{kind}-{uuid.uuid5(uuid.NAMESPACE_OID, '/'.join(map(str, parts)))}"


@dataclasses.dataclass
class Gpu:
    """What ``nvidia-smi`` knows about one GPU."""
    index: int
    name: str = H100
    device_id: str = H100_DEVICE_ID
    persistence_mode: str = "Enabled"
    mig_current: str = "Disabled"
    mig_pending: str = "Disabled"
    ecc: str = "Enabled"
    compute_mode: str = "Default"              # nvidia-smi -c: Default, Exclusive_Process or Prohibited
    retired_pages_pending: str = "[N/A]"       # H100 remaps rows instead of retiring pages
    remapped_rows_pending: str = "No"
    remapped_rows_failure: str = "No"
    mig_devices: tuple[str, ...] = ()          # MIG profile of each instance, e.g. "1g.10gb"
    memory_mib: int = 81559
    # PCIe: an idle GPU drops its link generation (nvidia-smi --help-query-gpu: "may be reduced
    # when the GPU is not in use"); an H100 SXM trains Gen5 x16 under load
    idle: bool = True
    pcie_gen: int = 1
    pcie_gen_max: int = 5
    pcie_width: int = 16
    pcie_width_max: int = 16
    clock_limiters: tuple[str, ...] = ()       # engaged: hw_slowdown, hw_thermal_slowdown, ...
    remapped_rows_uncorrectable: int = 0
    sram_uncorrectable: int = 0
    sram_correctable: int = 0
    # HGX H100/H200 8-GPU: 18 NVLink4 links per GPU at 26.562 GB/s each (nvidia-smi nvlink -s)
    nvlinks: int = 18
    nvlinks_down: tuple[int, ...] = ()
    nvlink_recovery_errors: int = 0

    @property
    def bus(self) -> str:
        return HGX_BUSES[self.index % len(HGX_BUSES)]

    @property
    def bus_id(self) -> str:
        return f"00000000:{self.bus}:00.0"

    @property
    def uuid(self) -> str:
        return stable_uuid("GPU", "h100", self.index)


@dataclasses.dataclass
class Module:
    """One line of /proc/modules."""
    name: str
    size: int
    refs: int = 0
    deps: tuple[str, ...] = ()
    taint: str = ""                            # e.g. "OE" for an out-of-tree unsigned module


@dataclasses.dataclass
class Unit:
    """A systemd unit as ``systemctl show`` reports it."""
    name: str
    unit_file_state: str = "enabled"
    active_state: str = "active"
    sub_state: str = "running"
    load_state: str = "loaded"


@dataclasses.dataclass
class DkmsEntry:
    module: str
    version: str
    kernel: str | None = None                  # None: registered only ("added", "broken")
    arch: str = "x86_64"
    state: str = "installed"


@dataclasses.dataclass
class Dkms:
    version: str = "3.0.11"                    # 3.x prints module/version, 2.x module, version
    entries: list[DkmsEntry] = dataclasses.field(default_factory=list)
    stderr: str = ""                           # warnings dkms prints on stderr


@dataclasses.dataclass
class Package:
    name: str
    version: str
    release: str = ""
    arch: str = "x86_64"
    # dpkg's want and status letters (dpkg(1) "PACKAGE STATES"): ii installed, rc removed with its
    # config files left (version kept), un known but never installed or purged (no version); an
    # rpm database holds installed packages only
    dpkg_state: str = "ii"


@dataclasses.dataclass
class Scenario:
    """Everything the renderer needs to build one simulated host."""
    name: str
    description: str
    hostname: str
    os_release: str
    kernel: str
    cmdline: str
    modules: list[Module]
    driver_version: str | None                 # loaded driver (None: /proc/driver/nvidia absent)
    driver_build: str                          # builder/date part of /proc/driver/nvidia/version
    gcc_line: str
    gpus: list[Gpu]
    sig_enforce: str = "N"
    lockdown: str | None = "[none] integrity confidentiality"
    headers: str = "present"                   # present | dangling | absent
    headers_dir: str = ""                      # where /lib/modules/<kver>/build points
    dkms: Dkms | None = None
    ld: str = "ok"                             # ok | not-executable | absent
    ld_version: str = "GNU ld version 2.30-123.el8"
    pid1: str = "systemd"
    units: list[Unit] | None = None            # None: no systemctl on the host
    processes: list[str] = dataclasses.field(default_factory=list)
    package_format: str = "rpm"                # rpm | deb
    packages: list[Package] = dataclasses.field(default_factory=list)
    fabricmanager_version: str | None = DRIVER  # what nv-fabricmanager --version says
    toolkit_version: str | None = "1.17.8"     # nvidia-ctk present with this version
    # Where the container toolkit's binaries are: the distribution package's /usr/bin, or the GPU
    # Operator's toolkit container's <toolkit.installDir>/toolkit (NVIDIA/gpu-operator
    # deployments/gpu-operator/values.yaml: toolkit.installDir "/usr/local/nvidia"), off PATH.
    toolkit_dir: str = "/usr/bin"
    runtime_binary: bool = True                # <toolkit_dir>/nvidia-container-runtime present
    containerd_version: str = "1.7.27"
    containerd_config_version: int = 2
    containerd_nvidia_runtime: bool = True
    containerd_default_runtime: str = "nvidia"
    containerd_dropin: bool = False            # config v3: nvidia-ctk's conf.d drop-in + imports
    # enable_cdi written in the config (the toolkit's drop-in); None: containerd's default, which
    # its version decides (internal/cri/config/config_unix.go: off in 1.7, on from 2.0)
    containerd_enable_cdi: bool | None = None
    cdi_specs: dict[str, str] = dataclasses.field(default_factory=dict)   # path -> CDI spec
    sysctls: dict[str, str] = dataclasses.field(default_factory=dict)
    dmesg: list[str] = dataclasses.field(default_factory=list)
    initramfs_tool: str | None = "lsinitrd"    # lsinitrd | lsinitramfs | None
    initramfs_extra: list[str] = dataclasses.field(default_factory=list)
    modprobe_files: dict[str, str] = dataclasses.field(default_factory=dict)
    modinfo_nvidia: bool = True                # nvidia.ko on disk for the running kernel
    cuda_version: str = "13.0"
    uptime_s: float = 200000.0                  # /proc/uptime: the kernel log's clock
    dcgm_failures: dict[str, tuple[int, str]] | None = None   # dcgmi installed: failing test -> (GPU, info)
    # Where the GPU Operator's driver container provides the driver: its rootfs as the host sees it
    # (NVIDIA/gpu-driver-container ubuntu24.04/nvidia-driver _mount_rootfs: `mount --rbind /
    # /run/nvidia/driver`), with nvidia-smi, libnvidia-ml.so.1 and nv-fabricmanager in it and the
    # device nodes under its /dev (NVIDIA/gpu-operator internal/driver/root.go GetDevRoot: the driver
    # root when it has a /dev; cmd/nvidia-validator/main.go createDevCharSymlinks creates the nodes
    # there). None: the driver is installed on the host.
    driver_root: str | None = None
    # the GPU Operator validator's status files (gpu-operator validator/main.go), None: no operator
    operator_validations: dict[str, str] | None = dataclasses.field(default_factory=lambda: {
        "driver-ready": "IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\nDRIVER_ROOT_CTR_PATH=/host\n"
                        "NVIDIA_DEV_ROOT=/\nDEV_ROOT_CTR_PATH=/host\n",
        "toolkit-ready": "", "cuda-ready": "", "plugin-ready": ""})

    @property
    def runtime_path(self) -> str:
        """nvidia-container-runtime's path, where containerd's `nvidia` runtime points."""
        return f"{self.toolkit_dir}/nvidia-container-runtime"

    @property
    def enable_cdi(self) -> bool:
        """What containerd runs with (and `config dump` prints)."""
        if self.containerd_enable_cdi is not None:
            return self.containerd_enable_cdi
        return self.containerd_config_version >= 3

    @property
    def loaded(self) -> set[str]:
        return {m.name for m in self.modules}

    def clone(self, name: str, description: str) -> "Scenario":
        new = copy.deepcopy(self)
        new.name, new.description = name, description
        return new


