"""Simulated GPU hosts as data: one good H100 worker, two good variants, and single-fault patches.

A :class:`Scenario` holds what a host *is* (kernel, modules, GPUs, units, packages, files); the
renderer (:mod:`testbed.hosts.rootfs`) derives what the host *shows* from it (``/proc``, ``/dev``,
the answers of ``nvidia-smi``, ``dkms``, ``systemctl`` ...). A fault is a small function that
changes the good scenario the way a real host with that one fault would differ, nothing more.
"""
from __future__ import annotations

import copy
import dataclasses
import uuid
from typing import Callable

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
    retired_pages_pending: str = "[N/A]"       # H100 remaps rows instead of retiring pages
    remapped_rows_pending: str = "No"
    remapped_rows_failure: str = "No"
    mig_devices: tuple[str, ...] = ()          # MIG profile of each instance, e.g. "1g.10gb"
    memory_mib: int = 81559

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
    runtime_binary: bool = True                # /usr/bin/nvidia-container-runtime present
    containerd_version: str = "1.7.27"
    containerd_config_version: int = 2
    containerd_nvidia_runtime: bool = True
    containerd_default_runtime: str = "nvidia"
    containerd_dropin: bool = False            # config v3: nvidia-ctk's conf.d drop-in + imports
    sysctls: dict[str, str] = dataclasses.field(default_factory=dict)
    dmesg: list[str] = dataclasses.field(default_factory=list)
    initramfs_tool: str | None = "lsinitrd"    # lsinitrd | lsinitramfs | None
    initramfs_extra: list[str] = dataclasses.field(default_factory=list)
    modprobe_files: dict[str, str] = dataclasses.field(default_factory=dict)
    modinfo_nvidia: bool = True                # nvidia.ko on disk for the running kernel
    cuda_version: str = "13.0"

    @property
    def loaded(self) -> set[str]:
        return {m.name for m in self.modules}

    def clone(self, name: str, description: str) -> "Scenario":
        new = copy.deepcopy(self)
        new.name, new.description = name, description
        return new


# --- the good hosts ---------------------------------------------------------------------------

_REDOS_RELEASE = """NAME="RED OS"
VERSION="8.0"
ID="redos"
ID_LIKE="rhel fedora"
VERSION_ID="8.0"
PRETTY_NAME="RED OS 8.0"
ANSI_COLOR="0;31"
CPE_NAME="cpe:/o:red-soft:redos:8.0"
"""
_UBUNTU_RELEASE = """NAME="Ubuntu"
VERSION="20.04.6 LTS (Focal Fossa)"
ID=ubuntu
ID_LIKE=debian
PRETTY_NAME="Ubuntu 20.04.6 LTS"
VERSION_ID="20.04"
VERSION_CODENAME=focal
UBUNTU_CODENAME=focal
"""


def _base_modules() -> list[Module]:
    """Ordinary modules of a GPU worker, plus the NVIDIA driver stack."""
    return [
        Module("nvidia_uvm", 2076672, 4, (), "OE"),
        Module("nvidia_modeset", 1843200, 0, (), "OE"),
        Module("nvidia", 14381056, 106, ("nvidia_uvm", "nvidia_modeset"), "OE"),
        Module("br_netfilter", 32768, 0, ("bridge",)),
        Module("bridge", 421888, 1, ("br_netfilter",)),
        Module("overlay", 217088, 21),
        Module("nf_tables", 385024, 12),
        Module("ipmi_msghandler", 90112, 2, ("ipmi_devintf", "ipmi_si")),
        Module("video", 81920, 1, ("nvidia_modeset",)),
        Module("xfs", 2580480, 3),
        Module("mlx5_core", 2834432, 1, ("mlx5_ib",)),
    ]


def _nouveau_module() -> Module:
    return Module("nouveau", 3182592, 0, ("drm_ttm_helper", "ttm", "drm_display_helper"))


def _driver_dmesg(version: str) -> list[str]:
    return [
        "[    0.000000] Linux version {kver} (mockbuild@builder) (gcc (GCC) 8.5.0) #1 SMP PREEMPT_DYNAMIC",
        "[    0.000000] Command line: {cmdline}",
        "[    5.912311] nvidia: loading out-of-tree module taints kernel.",
        "[    5.912340] nvidia: module verification failed: signature and/or required key missing - tainting kernel",
        "[    5.981244] nvidia-nvlink: Nvlink Core is being initialized, major device number 511",
        f"[    6.004511] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build"
        "  (dvs-builder@U16-I1-N07-12-3)  Thu Sep 25 00:57:36 UTC 2025",
        f"[    6.410920] nvidia-modeset: Loading NVIDIA UNIX Open Kernel Mode Setting Driver for x86_64  {version}"
        "  Release Build  (dvs-builder@U16-I1-N07-12-3)  Thu Sep 25 00:43:21 UTC 2025",
        "[    6.512003] nvidia_uvm: module uses symbols nvUvmInterfaceDisableAccessCntr from proprietary module nvidia, inheriting taint.",
        "[   31.220145] NVRM: Persistence mode is deprecated and will be removed in a future release. Please use nvidia-persistenced instead.",
    ]


def _units() -> list[Unit]:
    return [Unit("nvidia-persistenced.service"), Unit("nvidia-fabricmanager.service"),
            Unit("containerd.service")]


def gpu_good() -> Scenario:
    """The H100 worker of the seed article, as profiles/seed-h100.yaml expects it."""
    kver = KERNEL
    cmdline = (f"BOOT_IMAGE=(hd0,gpt2)/vmlinuz-{kver} root=/dev/mapper/ro-root ro crashkernel=auto "
               "resume=/dev/mapper/ro-swap rd.lvm.lv=ro/root rd.lvm.lv=ro/swap rhgb quiet "
               "module.sig_enforce=0 rd.driver.blacklist=nouveau")
    return Scenario(
        name="gpu-good",
        description="good HGX H100 worker on RED OS (RHEL family), driver 580.95.05, everything in place",
        hostname="gpu-worker-1",
        os_release=_REDOS_RELEASE,
        kernel=kver,
        cmdline=cmdline,
        modules=_base_modules(),
        driver_version=DRIVER,
        driver_build="(dvs-builder@U16-I1-N07-12-3)  Thu Sep 25 00:57:36 UTC 2025",
        gcc_line="GCC version:  gcc version 8.5.0 20210514 (Red Hat 8.5.0-22) (GCC) ",
        gpus=[Gpu(i) for i in range(8)],
        headers_dir=f"/usr/src/kernels/{kver}",
        dkms=Dkms("3.0.11", [DkmsEntry("nvidia", DRIVER, OLDER_KERNEL),
                             DkmsEntry("nvidia", DRIVER, kver)]),
        units=_units(),
        processes=["nvidia-persistenced", "nv-fabricmanager", "containerd"],
        packages=[Package("kernel-lt", "6.12.21", "red80"),
                  Package("kernel-lt-devel", "6.12.21", "red80"),
                  Package("dkms", "3.0.11", "1.el8", "noarch"),
                  Package("nvidia-fabric-manager", DRIVER, "1"),
                  Package("nvidia-container-toolkit", "1.17.8", "1"),
                  Package("containerd.io", "1.7.27", "3.1.el8")],
        sysctls={"net.core.bpf_jit_harden": "1", "net.ipv4.ip_forward": "1",
                 "kernel.osrelease": kver},
        dmesg=_driver_dmesg(DRIVER),
        modprobe_files={"/etc/modprobe.d/blacklist-nouveau.conf": BLACKLIST_NOUVEAU},
    )


def good_mig() -> Scenario:
    s = gpu_good().clone("good-mig", "good worker with MIG enabled on all GPUs (all-1g.10gb)")
    for gpu in s.gpus:
        gpu.mig_current = gpu.mig_pending = "Enabled"
        gpu.mig_devices = ("1g.10gb",) * 7
    return s


def good_debian() -> Scenario:
    """Ubuntu-like good worker: dkms 2.x comma form, lsinitramfs, dpkg, containerd 2 (config v3)."""
    s = gpu_good().clone("good-debian", "good worker on an Ubuntu-like host: dkms 2.x, dpkg, "
                                        "lsinitramfs, containerd config version 3 with a conf.d drop-in")
    kver = DEBIAN_KERNEL
    s.hostname = "gpu-worker-deb"
    s.os_release = _UBUNTU_RELEASE
    s.kernel = kver
    s.cmdline = (f"BOOT_IMAGE=/boot/vmlinuz-{kver} root=UUID=3f9c1d2e-7a41-4c55-9d0e-6b8e2f1a9c07 ro "
                 "quiet splash module.sig_enforce=0 rd.driver.blacklist=nouveau")
    s.headers_dir = f"/usr/src/linux-headers-{kver}"
    s.gcc_line = "GCC version:  gcc version 9.4.0 (Ubuntu 9.4.0-1ubuntu1~20.04.2) "
    s.dkms = Dkms("2.8.1", [DkmsEntry("nvidia", DRIVER, kver)])
    s.ld_version = "GNU ld (GNU Binutils for Ubuntu) 2.34"
    s.package_format = "deb"
    s.packages = [Package("nvidia-fabricmanager-580", f"{DRIVER}-1", arch="amd64"),
                  Package("nvidia-container-toolkit", "1.17.8-1", arch="amd64"),
                  Package("containerd.io", "2.1.4-1", arch="amd64"),
                  Package("dkms", "2.8.1-5ubuntu2", arch="all")]
    s.containerd_version = "2.1.4"
    s.containerd_config_version = 3
    s.containerd_dropin = True
    s.initramfs_tool = "lsinitramfs"
    s.sysctls["kernel.osrelease"] = kver
    return s


# --- the faults: one change each, as a real host with that fault would show it ----------------

Fault = Callable[[Scenario], None]
FAULTS: dict[str, tuple[str, Fault]] = {}


def fault(name: str, description: str):
    def register(fn: Fault) -> Fault:
        FAULTS[name] = (description, fn)
        return fn
    return register


@fault("nouveau-loaded", "nouveau is loaded next to the NVIDIA driver")
def _nouveau_loaded(s: Scenario) -> None:
    s.modules.append(_nouveau_module())


@fault("nouveau-not-blacklisted", "no modprobe.d file blacklists nouveau")
def _nouveau_not_blacklisted(s: Scenario) -> None:
    s.modprobe_files.clear()


@fault("nouveau-in-initramfs", "the initramfs still carries nouveau.ko (dracut --force not run)")
def _nouveau_in_initramfs(s: Scenario) -> None:
    s.initramfs_extra.append(
        f"usr/lib/modules/{s.kernel}/kernel/drivers/gpu/drm/nouveau/nouveau.ko.xz")


@fault("cmdline-missing-sig-enforce", "kernel command line lacks module.sig_enforce=0")
def _cmdline_missing_sig_enforce(s: Scenario) -> None:
    s.cmdline = s.cmdline.replace(" module.sig_enforce=0", "")


@fault("cmdline-has-lockdown", "lockdown=integrity on the command line, lockdown active "
                               "(driver still loaded: simplification, see README)")
def _cmdline_has_lockdown(s: Scenario) -> None:
    s.cmdline += " lockdown=integrity"
    s.lockdown = "none [integrity] confidentiality"


@fault("sig-enforce-blocks-driver", "signature enforcement forced on: the unsigned driver is "
                                    "rejected, so no driver, no devices, no daemons")
def _sig_enforce_blocks_driver(s: Scenario) -> None:
    s.sig_enforce = "Y"
    s.modules = [m for m in s.modules if not m.name.startswith("nvidia")]
    for m in s.modules:
        m.deps = tuple(d for d in m.deps if not d.startswith("nvidia"))
    s.driver_version = None
    s.dmesg = s.dmesg[:2] + [
        "[    5.912311] Loading of unsigned module is rejected",
        "[    5.913002] Loading of unsigned module is rejected",
    ]
    for unit in s.units or []:
        if unit.name in ("nvidia-persistenced.service", "nvidia-fabricmanager.service"):
            unit.active_state = unit.sub_state = "failed"
    s.processes = [p for p in s.processes if p == "containerd"]


@fault("no-kernel-headers", "kernel-devel for the running kernel missing: build link dangles")
def _no_kernel_headers(s: Scenario) -> None:
    s.headers = "dangling"


def _dkms_running(s: Scenario) -> DkmsEntry:
    assert s.dkms is not None
    return next(e for e in s.dkms.entries if e.kernel == s.kernel)


@fault("dkms-added", "dkms knows the nvidia source only (nvidia/580.95.05: added)")
def _dkms_added(s: Scenario) -> None:
    assert s.dkms is not None
    s.dkms.entries = [DkmsEntry("nvidia", DRIVER, None, state="added")]


@fault("dkms-built", "nvidia built by dkms for the running kernel but not installed")
def _dkms_built(s: Scenario) -> None:
    _dkms_running(s).state = "built"


@fault("dkms-broken", "the dkms tree lost the nvidia source (dkms status: broken)")
def _dkms_broken(s: Scenario) -> None:
    assert s.dkms is not None
    s.dkms.entries = [DkmsEntry("nvidia", DRIVER, None, state="broken")]
    s.dkms.stderr = " - Missing module source directory, or the symbolic link pointing to it\n"


@fault("dkms-other-kernel-only", f"nvidia installed by dkms for {OLDER_KERNEL} only")
def _dkms_other_kernel_only(s: Scenario) -> None:
    assert s.dkms is not None
    s.dkms.entries = [e for e in s.dkms.entries if e.kernel != s.kernel]


@fault("dkms-wrong-version", f"dkms has nvidia {OTHER_DRIVER} for the running kernel "
                             "(loaded driver still 580.95.05 until reboot)")
def _dkms_wrong_version(s: Scenario) -> None:
    assert s.dkms is not None
    s.dkms.entries = [DkmsEntry("nvidia", OTHER_DRIVER, s.kernel)]


@fault("ld-not-executable", "/usr/bin/ld lost its execute bit (the article's make.log failure)")
def _ld_not_executable(s: Scenario) -> None:
    s.ld = "not-executable"


@fault("driver-wrong-version", f"driver {OTHER_DRIVER} installed (dkms) and loaded instead of "
                               f"{DRIVER}; fabric manager {DRIVER} then refuses to start")
def _driver_wrong_version(s: Scenario) -> None:
    s.driver_version = OTHER_DRIVER
    s.dmesg = _driver_dmesg(OTHER_DRIVER)
    for e in s.dkms.entries if s.dkms else []:
        e.version = OTHER_DRIVER
    _fabricmanager_fails(s)


@fault("gpu-missing", "one of the eight GPUs is gone (7 visible, /dev/nvidia0..6)")
def _gpu_missing(s: Scenario) -> None:
    s.gpus = s.gpus[:7]


@fault("wrong-product", "the GPUs are H100 PCIe, not H100 80GB HBM3 (SXM)")
def _wrong_product(s: Scenario) -> None:
    for gpu in s.gpus:
        gpu.name, gpu.device_id = H100_PCIE, H100_PCIE_DEVICE_ID


@fault("fabricmanager-mismatch", f"fabric manager {OTHER_DRIVER} with driver {DRIVER}: "
                                 "it refuses to start")
def _fabricmanager_mismatch(s: Scenario) -> None:
    s.fabricmanager_version = OTHER_DRIVER
    for p in s.packages:
        if "fabric" in p.name:
            p.version = OTHER_DRIVER if s.package_format == "rpm" else f"{OTHER_DRIVER}-1"
    _fabricmanager_fails(s)


@fault("fabricmanager-inactive", "nvidia-fabricmanager enabled but failed, not running")
def _fabricmanager_inactive(s: Scenario) -> None:
    _fabricmanager_fails(s)


def _fabricmanager_fails(s: Scenario) -> None:
    """Fabric manager exits at start (e.g. its version differs from the driver's)."""
    _unit(s, "nvidia-fabricmanager.service", active_state="failed", sub_state="failed")
    s.processes.remove("nv-fabricmanager")


@fault("persistenced-inactive", "nvidia-persistenced disabled and stopped (persistence set "
                                "by legacy nvidia-smi -pm 1)")
def _persistenced_inactive(s: Scenario) -> None:
    _unit(s, "nvidia-persistenced.service", unit_file_state="disabled",
          active_state="inactive", sub_state="dead")
    s.processes.remove("nvidia-persistenced")


@fault("persistence-disabled", "daemon runs with --no-persistence-mode: GPUs report Disabled")
def _persistence_disabled(s: Scenario) -> None:
    for gpu in s.gpus:
        gpu.persistence_mode = "Disabled"


@fault("toolkit-missing", "nvidia-ctk is not installed")
def _toolkit_missing(s: Scenario) -> None:
    s.toolkit_version = None


@fault("runtime-binary-missing", "/usr/bin/nvidia-container-runtime is gone (config still points at it)")
def _runtime_binary_missing(s: Scenario) -> None:
    s.runtime_binary = False


@fault("containerd-no-nvidia-runtime", "containerd has no nvidia runtime (nvidia-ctk runtime "
                                       "configure never run)")
def _containerd_no_nvidia_runtime(s: Scenario) -> None:
    s.containerd_nvidia_runtime = False
    s.containerd_default_runtime = "runc"


@fault("containerd-not-default", "nvidia runtime configured, but runc stays the default")
def _containerd_not_default(s: Scenario) -> None:
    s.containerd_default_runtime = "runc"


@fault("bpf-jit-harden-2", "net.core.bpf_jit_harden=2 (breaks the operator's validator)")
def _bpf_jit_harden_2(s: Scenario) -> None:
    s.sysctls["net.core.bpf_jit_harden"] = "2"


@fault("mig-pending", "GPU 3: MIG enable pending a GPU reset (current Disabled, pending Enabled)")
def _mig_pending(s: Scenario) -> None:
    s.gpus[3].mig_pending = "Enabled"


@fault("xid-in-log", "kernel log holds an Xid 79 (GPU has fallen off the bus)")
def _xid_in_log(s: Scenario) -> None:
    s.dmesg.append("[183211.553120] NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', "
                   "name=<unknown>, GPU has fallen off the bus.")
    s.dmesg.append("[183211.553201] NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.")


@fault("ecc-disabled", "ECC disabled on GPU 5")
def _ecc_disabled(s: Scenario) -> None:
    s.gpus[5].ecc = "Disabled"


@fault("row-remap-failure", "GPU 2 ran out of spare rows: remapped_rows.failure = Yes")
def _row_remap_failure(s: Scenario) -> None:
    s.gpus[2].remapped_rows_failure = "Yes"


@fault("no-systemd", "container-like host: PID 1 is tini and there is no systemctl")
def _no_systemd(s: Scenario) -> None:
    s.pid1 = "tini"
    s.units = None


@fault("no-systemd-persistence-off", "container-like host (PID 1 tini, no systemd): nvidia-persistenced "
                                     "does not run and persistence mode is off")
def _no_systemd_persistence_off(s: Scenario) -> None:
    _no_systemd(s)
    s.processes.remove("nvidia-persistenced")
    for gpu in s.gpus:
        gpu.persistence_mode = "Disabled"


def _unit(s: Scenario, name: str, **changes: str) -> None:
    assert s.units is not None
    unit = next(u for u in s.units if u.name == name)
    for key, value in changes.items():
        setattr(unit, key, value)


# --- the catalog ------------------------------------------------------------------------------

GOOD: dict[str, Callable[[], Scenario]] = {
    "gpu-good": gpu_good,
    "good-mig": good_mig,
    "good-debian": good_debian,
}


def names() -> list[str]:
    """Every scenario name, good ones first."""
    return [*GOOD, *FAULTS]


def build(name: str, on: str = "gpu-good") -> Scenario:
    """The scenario called ``name``: a good host, or a good host (the H100 worker unless ``on``
    names another) with one fault."""
    if name in GOOD:
        return GOOD[name]()
    try:
        description, apply = FAULTS[name]
    except KeyError:
        raise KeyError(f"unknown scenario {name!r}; known: {', '.join(names())}") from None
    s = GOOD[on]().clone(name, description)
    apply(s)
    return s
