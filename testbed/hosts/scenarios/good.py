"""The good simulated hosts: the seed article's H100 worker and its good variants."""
from __future__ import annotations

from testbed.hosts.scenarios.model import (BLACKLIST_NOUVEAU, DEBIAN_KERNEL, DRIVER, KERNEL, OLDER_KERNEL, Dkms,
                                           DkmsEntry, Gpu, Module, Package, Scenario, Unit)

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


def good_debian_upgraded() -> Scenario:
    """Ubuntu-like good worker moved from the 570 to the 580 branch: dpkg still knows the old
    branch's fabric manager (removed, not purged: ``rc`` with its old version) and a branch it never
    installed (``un``, no version); only the 580 package is installed."""
    s = good_debian().clone("upgraded-debian", "good Ubuntu-like worker after a driver branch "
                            "move: the old fabric manager in dpkg state rc, another known as un")
    s.packages[:0] = [Package("nvidia-fabricmanager-570", "570.172.08-1", arch="amd64", dpkg_state="rc"),
                      Package("nvidia-fabricmanager-575", "", arch="amd64", dpkg_state="un")]
    return s


def _cdi_spec(kind: str, devices: list[tuple[str, list[str]]]) -> str:
    """A CDI spec as the toolkit writes it: tags.cncf.io/container-device-interface specs-go
    (cdiVersion, kind, devices[].name, containerEdits.deviceNodes[].path) marshalled by
    sigs.k8s.io/yaml, which orders keys alphabetically, so `kind` comes last."""
    lines = ["---", "cdiVersion: 0.5.0", "containerEdits:", "  deviceNodes:", "  - path: /dev/nvidiactl",
             "  - path: /dev/nvidia-uvm", "devices:"]
    for name, nodes in devices:
        lines += ["- containerEdits:", "    deviceNodes:", *(f"    - path: {n}" for n in nodes), f"  name: {name}"]
    return "\n".join([*lines, f"kind: {kind}", ""])


def cdi_debian() -> Scenario:
    """The Ubuntu worker on GPU Operator v25.10 with the host's toolkit: CDI on, runc stays
    containerd's default; workloads get GPUs through containerd's CDI injection."""
    s = good_debian().clone("cdi-debian", "Ubuntu worker on GPU Operator v25.10: CDI on, runc the default "
                                          "runtime, CDI specs of the toolkit and the device plugin in /var/run/cdi")
    # gpu-operator v25.10 values.yaml: cdi.enabled true, nvidia not set as containerd's default.
    # nvidia-container-toolkit v1.18 deployments/systemd/nvidia-cdi-refresh.service (installed by
    # the package): `nvidia-ctk cdi generate` to /var/run/cdi/nvidia.yaml, kind nvidia.com/gpu
    # (pkg/nvcdi defaults). k8s-device-plugin with device-list-strategy cdi-cri writes its own spec,
    # kind k8s.device-plugin.nvidia.com/gpu, devices named by UUID.
    s.toolkit_version = "1.18.0"
    for p in s.packages:
        if p.name == "nvidia-container-toolkit":
            p.version = "1.18.0-1"
    s.containerd_default_runtime = "runc"
    s.containerd_enable_cdi = True
    nodes = [(str(g.index), [f"/dev/nvidia{g.index}"]) for g in s.gpus]
    uuids = [(g.uuid, [f"/dev/nvidia{g.index}"]) for g in s.gpus]
    s.cdi_specs = {
        "/var/run/cdi/nvidia.yaml": _cdi_spec("nvidia.com/gpu", [*nodes, *uuids]),
        "/var/run/cdi/k8s.device-plugin.nvidia.com-gpu.yaml": _cdi_spec("k8s.device-plugin.nvidia.com/gpu", uuids),
    }
    return s


def dcgm_good() -> Scenario:
    """The H100 worker with DCGM installed on the host (dcgmi), every level-1 diagnostic passing."""
    s = gpu_good().clone("dcgm-good", "good H100 worker with dcgmi on the host: level-1 diagnostics pass")
    s.dcgm_failures = {}
    return s
