"""Render a :class:`~testbed.hosts.scenarios.Scenario` into a root directory usable by ``chroot``.

The userland is busybox-static (one binary plus applet links), except the shells and ``timeout``:
Debian's busybox runs its own applets before searching PATH, so a busybox ``sh`` would answer
``dmesg``, ``rpm`` or ``modinfo`` from the real machine instead of the scenario. The hosts get the
machine's bash (``/bin/sh`` on the RHEL family) or dash (``/bin/sh`` on the Debian family) and
coreutils ``timeout``, copied with their libraries. ``/proc``, ``/sys`` and ``/dev``
are plain files and real character devices written for the scenario (the real ``/proc`` is never
touched). The NVIDIA, dkms, systemd and package tools are small sh/awk emulators that answer from
the host's state under ``/var/lib/gpusim`` (:mod:`testbed.hosts.hosttools`).
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

from testbed.hosts import containerd_configs, hosttools
from testbed.hosts.hosttools import STATE
from testbed.hosts.rootwriter import Root
from testbed.hosts.scenarios import Scenario

BUSYBOX = Path("/bin/busybox")
#: busybox applets the simulated hosts get. Tools that must answer from the scenario (dmesg,
#: modinfo, rpm, uname, hostname ...) are emulated instead, never linked to busybox.
APPLETS = (
    "ash", "cat", "grep", "egrep", "fgrep", "sed", "awk", "ls", "readlink", "realpath", "tr",
    "head", "tail", "echo", "printf", "test", "[", "[[", "true", "false", "env", "sort",
    "uniq", "wc", "cut", "basename", "dirname", "id", "whoami", "mkdir", "rm", "mktemp", "base64",
    "tee", "sleep", "expr", "stat", "find", "xargs", "date", "which", "touch", "chmod", "cp", "mv",
    "ln", "pwd", "od", "md5sum", "sha256sum", "seq", "tac", "diff", "cmp",
)
NVIDIA_MAJOR, UVM_MAJOR = 195, 509
PROC_IDS = {"systemd-journald": 612, "sshd": 1021, "nvidia-persistenced": 1123,
            "nv-fabricmanager": 1190, "containerd": 1302, "kubelet": 1450}
COMM_LEN = 15  # the kernel keeps 15 characters of a process name in /proc/<pid>/comm


#: Machine binaries the hosts run (with their shared libraries).
HOST_BINARIES = {"/usr/bin/bash": "/bin/bash", "/usr/bin/dash": "/bin/dash",
                 "/usr/bin/timeout": "/usr/bin/timeout"}


def digest(root: Path) -> str:
    """sha256 over every path below ``root`` with its type, mode, link target and content (symlinks
    not followed): two equal digests mean the tree did not change, byte for byte."""
    h = hashlib.sha256()
    for folder, dirs, files in sorted(os.walk(root)):
        for name in sorted(dirs + files):
            p = os.path.join(folder, name)
            st = os.lstat(p)
            h.update(f"{os.path.relpath(p, root)}\0{st.st_mode:o}\0".encode())
            if stat.S_ISLNK(st.st_mode):
                h.update(os.readlink(p).encode())
            elif stat.S_ISREG(st.st_mode):
                with open(p, "rb") as f:
                    h.update(f.read())
            h.update(b"\0")
    return h.hexdigest()


def render(s: Scenario, root: Path, stage: Path | None = None) -> Path:
    """Build the root directory of scenario ``s`` at ``root`` (replacing what was there).

    Binaries are copied once into ``stage`` (default: a ``.gpusim-bin`` folder next to ``root``)
    and hard-linked from there, so the machine's own files are never linked into a host.
    """
    root = Path(root).absolute()
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    root.chmod(0o755)  # sshd's ChrootDirectory wants root-owned, not group/other writable
    r = Root(root, stage or root.parent / ".gpusim-bin")
    _userland(r, s)
    _etc(r, s)
    _proc(r, s)
    _sys(r, s)
    _dev(r, s)
    _kernel_tree(r, s)
    hosttools.install(r, s)
    return root


def _userland(r: Root, s: Scenario) -> None:
    for d in ("usr/bin", "usr/sbin", "usr/lib", "usr/lib64"):
        r.dir(d)
    for top in ("bin", "sbin", "lib", "lib64"):  # merged /usr, as on RHEL 8+ and recent Ubuntu
        r.link(top, f"usr/{top}")
    r.binary("/usr/bin/busybox", str(BUSYBOX))
    for applet in APPLETS:
        r.link(f"/usr/bin/{applet}", "busybox")
    for path, source in HOST_BINARIES.items():
        r.binary(path, source)
        for lib in _shared_libraries(source):
            r.binary(lib, lib)
    # sshd runs root's login shell from the machine's passwd (/bin/bash): it exists in every host.
    r.link("/usr/bin/sh", "bash" if s.package_format == "rpm" else "dash")
    r.dir("/root", 0o700)
    r.dir("/tmp", 0o1777)
    r.dir("/var/tmp", 0o1777)
    r.dir("/run")


@functools.lru_cache(maxsize=None)
def _shared_libraries(binary: str) -> tuple[str, ...]:
    """Absolute paths of the libraries (and loader) ``binary`` needs, from ldd."""
    out = subprocess.run(["ldd", binary], capture_output=True, text=True, check=True).stdout
    return tuple(sorted(set(re.findall(r"(/\S+) \(0x", out))))


def _etc(r: Root, s: Scenario) -> None:
    r.write("/etc/os-release", s.os_release)
    if s.package_format == "rpm":
        r.write("/etc/redhat-release", "RED OS release 8.0\n")
    r.write("/etc/hostname", s.hostname + "\n")
    r.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n")
    r.write("/etc/group", "root:x:0:\nnobody:x:65534:\n")
    for path, content in s.modprobe_files.items():
        r.write(path, content)
    r.dir("/etc/modprobe.d")
    if s.driver_root is None:  # the host driver package's file
        r.write("/etc/modprobe.d/nvidia.conf" if s.package_format == "rpm" else
                "/etc/modprobe.d/nvidia-graphics-drivers-kms.conf", "options nvidia-drm modeset=1\n")
    for path, content in containerd_configs.files(s).items():
        r.write(path, content)
    for path, content in s.cdi_specs.items():
        r.write(path, content)
    for name, content in (s.operator_validations or {}).items():
        r.write(f"/run/nvidia/validations/{name}", content)
    if s.units is not None:
        for unit in s.units:
            if unit.load_state != "not-found":   # its package removed the unit file
                r.write(f"/usr/lib/systemd/system/{unit.name}", f"[Unit]\nDescription={unit.name}\n")


def _proc(r: Root, s: Scenario) -> None:
    r.write("/proc/sys/kernel/osrelease", s.kernel + "\n")
    r.write("/proc/sys/kernel/hostname", s.hostname + "\n")
    r.write("/proc/cmdline", s.cmdline + "\n")
    r.write("/proc/uptime", f"{s.uptime_s:.2f} {s.uptime_s * 100:.2f}\n")
    r.write("/proc/modules", "".join(_proc_modules_line(m) for m in s.modules))
    for key, value in s.sysctls.items():
        r.write("/proc/sys/" + key.replace(".", "/"), value + "\n")
    if s.driver_version:
        r.write("/proc/driver/nvidia/version",
                f"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {s.driver_version}  "
                f"Release Build  {s.driver_build}\n{s.gcc_line}\n")
        for gpu in s.gpus:
            r.write(f"/proc/driver/nvidia/gpus/0000:{gpu.bus.lower()}:00.0/information",
                    f"Model: \t\t {gpu.name}\nIRQ:   \t\t 0\nGPU UUID: \t {gpu.uuid}\n"
                    f"Bus Location: \t 0000:{gpu.bus.lower()}:00.0\n")
    processes = [(1, s.pid1)]
    if s.pid1 == "systemd":
        processes += [(PROC_IDS["systemd-journald"], "systemd-journald"), (PROC_IDS["sshd"], "sshd"),
                      (PROC_IDS["kubelet"], "kubelet")]
    processes += [(PROC_IDS.get(name, 2000 + i), name) for i, name in enumerate(s.processes)]
    for pid, name in processes:
        r.write(f"/proc/{pid}/comm", name[:COMM_LEN] + "\n")
        r.write(f"/proc/{pid}/cmdline", f"/usr/bin/{name}\0")


def _proc_modules_line(m) -> str:
    deps = "".join(f"{d}," for d in m.deps) or "-"
    taint = f" ({m.taint})" if m.taint else ""
    return f"{m.name} {m.size} {m.refs} {deps} Live 0x0000000000000000{taint}\n"


def _sys(r: Root, s: Scenario) -> None:
    r.write("/sys/module/module/parameters/sig_enforce", s.sig_enforce + "\n")
    if s.lockdown is not None:
        r.write("/sys/kernel/security/lockdown", s.lockdown + "\n")
    for m in s.modules:
        r.write(f"/sys/module/{m.name}/refcnt", f"{m.refs}\n")
        if m.name == "nvidia" and s.driver_version:
            r.write("/sys/module/nvidia/version", s.driver_version + "\n")


def _dev(r: Root, s: Scenario) -> None:
    r.chardev("/dev/null", 1, 3)
    r.chardev("/dev/zero", 1, 5)
    r.chardev("/dev/urandom", 1, 9, 0o666)
    r.chardev("/dev/tty", 5, 0)
    dev = f"{s.driver_root or ''}/dev"  # NVIDIA's nodes: the host's, or the driver container's (model.py)
    if "nvidia" in s.loaded:
        r.chardev(f"{dev}/nvidiactl", NVIDIA_MAJOR, 255)
        for gpu in s.gpus:
            r.chardev(f"{dev}/nvidia{gpu.index}", NVIDIA_MAJOR, gpu.index)
    if "nvidia_modeset" in s.loaded:
        r.chardev(f"{dev}/nvidia-modeset", NVIDIA_MAJOR, 254)
    if "nvidia_uvm" in s.loaded:
        r.chardev(f"{dev}/nvidia-uvm", UVM_MAJOR, 0)
        r.chardev(f"{dev}/nvidia-uvm-tools", UVM_MAJOR, 1)


def _kernel_tree(r: Root, s: Scenario) -> None:
    kver = s.kernel
    mods = f"/lib/modules/{kver}"
    r.write(f"{mods}/modules.dep", "")
    if s.modinfo_nvidia:
        r.write(f"{mods}/extra/nvidia.ko.xz", b"\xfd7zXZ\0 simulated module\n")
    if s.headers == "present":
        r.write(f"{s.headers_dir}/Makefile", f"# kernel headers for {kver}\nVERSION = 6\n")
    if s.headers in ("present", "dangling"):
        r.link(f"{mods}/build", s.headers_dir)
    boot_image = f"/boot/vmlinuz-{kver}"
    r.write(boot_image, b"MZ simulated kernel image\n")
    r.write(f"/boot/config-{kver}", "CONFIG_MODULE_SIG=y\nCONFIG_MODULE_SIG_ALL=y\n")
    if s.initramfs_tool == "lsinitrd":
        image = f"/boot/initramfs-{kver}.img"
        r.write(image, b"\x30\x37\x30\x37\x30\x31 simulated initramfs\n")
        r.write(f"{STATE}/initramfs/{Path(image).name}", _lsinitrd_listing(s, image))
    elif s.initramfs_tool == "lsinitramfs":
        image = f"/boot/initrd.img-{kver}"
        r.write(image, b"\x30\x37\x30\x37\x30\x31 simulated initramfs\n")
        r.write(f"{STATE}/initramfs/{Path(image).name}", _lsinitramfs_listing(s))


def _initramfs_files(s: Scenario) -> list[str]:
    rhel = s.package_format == "rpm"
    mods = f"usr/lib/modules/{s.kernel}" if rhel else f"lib/modules/{s.kernel}"  # dracut vs initramfs-tools
    ko = "ko.xz" if rhel else "ko"
    files = [
        *([("etc/modprobe.d/nvidia.conf" if rhel else "etc/modprobe.d/nvidia-graphics-drivers-kms.conf")]
          if s.driver_root is None else []),
        f"{mods}/kernel/drivers/md/dm-mod.{ko}",
        f"{mods}/kernel/drivers/net/ethernet/mellanox/mlx5/core/mlx5_core.{ko}",
        f"{mods}/kernel/fs/xfs/xfs.{ko}",
        f"{mods}/modules.dep",
        "usr/bin/bash", "usr/bin/udevadm", "usr/lib/systemd/systemd",
    ]
    # dracut/initramfs-tools copy modprobe.d into the image: the blacklist file shows up by name.
    files += [p.lstrip("/") for p in s.modprobe_files]
    return sorted(files + s.initramfs_extra)


def _lsinitrd_listing(s: Scenario, image: str) -> str:
    bar = "=" * 72
    lines = [f"Image: {image}: 38M", bar, "Early CPIO image", bar,
             "drwxr-xr-x   3 root     root            0 Sep 26 10:14 .",
             "-rw-r--r--   1 root     root            2 Sep 26 10:14 early_cpio", bar,
             "Version: dracut-049-233.git20240115.el8", "",
             f"Arguments: -f --kver '{s.kernel}'", "", "dracut modules:",
             "bash", "systemd", "systemd-initrd", "kernel-modules", "lvm", "dm", "rootfs-block",
             "shutdown", bar]
    for f in _initramfs_files(s):
        lines.append(f"-rw-r--r--   1 root     root        41652 Sep 26 10:14 {f}")
    return "\n".join(lines + [bar]) + "\n"


def _lsinitramfs_listing(s: Scenario) -> str:
    return "\n".join([".", "bin", "conf", "conf/initramfs.conf", "etc", "etc/modprobe.d", "lib",
                      "scripts", "scripts/init-top", *_initramfs_files(s)]) + "\n"
