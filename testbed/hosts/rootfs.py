"""Render a :class:`~testbed.hosts.scenarios.Scenario` into a root directory usable by ``chroot``.

The userland is busybox-static (one binary plus applet links), except the shells and ``timeout``:
Debian's busybox runs its own applets before searching PATH, so a busybox ``sh`` would answer
``dmesg``, ``rpm`` or ``modinfo`` from the real machine instead of the scenario. The hosts get the
machine's bash (``/bin/sh`` on the RHEL family) or dash (``/bin/sh`` on the Debian family) and
coreutils ``timeout``, copied with their libraries. ``/proc``, ``/sys`` and ``/dev``
are plain files and real character devices written for the scenario (the real ``/proc`` is never
touched). The NVIDIA, dkms, systemd and package tools are small sh/awk emulators that answer from
the host's state under ``/var/lib/gpusim``; a tool the scenario lacks is simply not there.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import os
import re
import shlex
import shutil
import stat
import subprocess
from pathlib import Path

from testbed.hosts import containerd_configs
from testbed.hosts.scenarios import DRIVER, Scenario, stable_uuid

BUSYBOX = Path("/bin/busybox")
EMULATORS = Path(__file__).parent / "emulators"
STATE = "/var/lib/gpusim"
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


class _Root:
    """Writes files below one root directory (paths given as the host sees them)."""

    def __init__(self, root: Path, stage: Path):
        self.root = root
        self.stage = stage

    def binary(self, p: str, source: str) -> None:
        """Install machine file ``source`` at ``p``: staged copy, hard-linked (copied if need be)."""
        staged = self.stage / source.lstrip("/")
        src = Path(source).resolve()
        fresh = src.stat()
        if not staged.exists() or (staged.stat().st_size, staged.stat().st_mtime_ns) != \
                (fresh.st_size, fresh.st_mtime_ns):
            staged.parent.mkdir(parents=True, exist_ok=True)
            tmp = staged.with_name(staged.name + f".{os.getpid()}")
            shutil.copy2(src, tmp)
            os.replace(tmp, staged)
        target = self.path(p)
        if target.exists():  # a library two binaries share
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(staged, target)
        except OSError:
            shutil.copy2(staged, target)

    def path(self, p: str) -> Path:
        return self.root / p.lstrip("/")

    def write(self, p: str, content: str | bytes, mode: int = 0o644) -> None:
        target = self.path(p)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        target.write_bytes(data)
        target.chmod(mode)

    def script(self, p: str, content: str) -> None:
        self.write(p, content, 0o755)

    def link(self, p: str, target: str) -> None:
        link = self.path(p)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)

    def dir(self, p: str, mode: int = 0o755) -> None:
        d = self.path(p)
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(mode)

    def chardev(self, p: str, major: int, minor: int, mode: int = 0o666) -> None:
        node = self.path(p)
        node.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(node, stat.S_IFCHR | mode, os.makedev(major, minor))
        node.chmod(mode)


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
    r = _Root(root, stage or root.parent / ".gpusim-bin")
    _userland(r, s)
    _etc(r, s)
    _proc(r, s)
    _sys(r, s)
    _dev(r, s)
    _kernel_tree(r, s)
    _tools(r, s)
    return root


def _userland(r: _Root, s: Scenario) -> None:
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


def _etc(r: _Root, s: Scenario) -> None:
    r.write("/etc/os-release", s.os_release)
    if s.package_format == "rpm":
        r.write("/etc/redhat-release", "RED OS release 8.0\n")
    r.write("/etc/hostname", s.hostname + "\n")
    r.write("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n")
    r.write("/etc/group", "root:x:0:\nnobody:x:65534:\n")
    for path, content in s.modprobe_files.items():
        r.write(path, content)
    r.dir("/etc/modprobe.d")
    r.write("/etc/modprobe.d/nvidia.conf" if s.package_format == "rpm" else
            "/etc/modprobe.d/nvidia-graphics-drivers-kms.conf", "options nvidia-drm modeset=1\n")
    for path, content in containerd_configs.files(s).items():
        r.write(path, content)
    if s.units is not None:
        for unit in s.units:
            r.write(f"/usr/lib/systemd/system/{unit.name}", f"[Unit]\nDescription={unit.name}\n")


def _proc(r: _Root, s: Scenario) -> None:
    r.write("/proc/sys/kernel/osrelease", s.kernel + "\n")
    r.write("/proc/sys/kernel/hostname", s.hostname + "\n")
    r.write("/proc/cmdline", s.cmdline + "\n")
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


def _sys(r: _Root, s: Scenario) -> None:
    r.write("/sys/module/module/parameters/sig_enforce", s.sig_enforce + "\n")
    if s.lockdown is not None:
        r.write("/sys/kernel/security/lockdown", s.lockdown + "\n")
    for m in s.modules:
        r.write(f"/sys/module/{m.name}/refcnt", f"{m.refs}\n")
        if m.name == "nvidia" and s.driver_version:
            r.write("/sys/module/nvidia/version", s.driver_version + "\n")


def _dev(r: _Root, s: Scenario) -> None:
    r.chardev("/dev/null", 1, 3)
    r.chardev("/dev/zero", 1, 5)
    r.chardev("/dev/urandom", 1, 9, 0o666)
    r.chardev("/dev/tty", 5, 0)
    if "nvidia" in s.loaded:
        r.chardev("/dev/nvidiactl", NVIDIA_MAJOR, 255)
        for gpu in s.gpus:
            r.chardev(f"/dev/nvidia{gpu.index}", NVIDIA_MAJOR, gpu.index)
    if "nvidia_modeset" in s.loaded:
        r.chardev("/dev/nvidia-modeset", NVIDIA_MAJOR, 254)
    if "nvidia_uvm" in s.loaded:
        r.chardev("/dev/nvidia-uvm", UVM_MAJOR, 0)
        r.chardev("/dev/nvidia-uvm-tools", UVM_MAJOR, 1)


def _kernel_tree(r: _Root, s: Scenario) -> None:
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
        "etc/modprobe.d/nvidia.conf" if rhel else "etc/modprobe.d/nvidia-graphics-drivers-kms.conf",
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


# --- tools ------------------------------------------------------------------------------------

def _canned(tool: str, answers: list[tuple[str, str, str, int]], usage: str) -> str:
    """An emulator with fixed answers: (sh case pattern on "$*", stdout, stderr, rc)."""
    out = [f"#!/bin/sh\n# {tool} emulator (gpuconform test bed): this host's fixed answers.\ncase \"$*\" in"]
    for pattern, stdout, stderr, rc in answers:
        out.append(f"  {pattern})")
        if stdout:
            out.append(f"    cat <<'GPUSIM_EOF'\n{stdout.rstrip(chr(10))}\nGPUSIM_EOF")
        if stderr:
            out.append(f"    cat >&2 <<'GPUSIM_EOF'\n{stderr.rstrip(chr(10))}\nGPUSIM_EOF")
        out.append(f"    exit {rc} ;;")
    out.append(f"  *) echo {shlex.quote(usage)} >&2; exit 1 ;;\nesac\n")
    return "\n".join(out)


def _tools(r: _Root, s: Scenario) -> None:
    kver = s.kernel
    # nvidia-smi: always installed (userspace driver package); fails like the real one without
    # the kernel driver.
    state = "loaded" if s.driver_version and "nvidia" in s.loaded else "absent"
    r.write(f"{STATE}/nvidia-smi/driver", f"{state} {s.driver_version or DRIVER} {s.cuda_version}\n")
    r.write(f"{STATE}/nvidia-smi/gpus.tsv", _gpus_tsv(s))
    r.write(f"{STATE}/nvidia-smi/mig.tsv", _mig_tsv(s))
    _install(r, "nvidia-smi", "/usr/bin/nvidia-smi")

    if s.dkms is not None:
        r.write(f"{STATE}/dkms/version", s.dkms.version + "\n")
        r.write(f"{STATE}/dkms/status.tsv", "".join(
            f"{e.module}\t{e.version}\t{e.kernel or '-'}\t{e.arch}\t{e.state}\n" for e in s.dkms.entries))
        r.write(f"{STATE}/dkms/stderr", s.dkms.stderr)
        _install(r, "dkms", "/usr/sbin/dkms")

    if s.units is not None:
        r.write(f"{STATE}/systemd/units.tsv", "".join(
            f"{u.name}\t{u.load_state}\t{u.active_state}\t{u.sub_state}\t{u.unit_file_state}\n"
            for u in s.units))
        _install(r, "systemctl", "/usr/bin/systemctl")
        journal = _journal(s)
        r.script("/usr/bin/journalctl", _canned("journalctl", [
            ("*-k*-n*", journal[-1] + "\n", "", 0),
            ("*-k*", "\n".join(journal) + "\n", "", 0)], "journalctl: only -k is simulated"))

    if s.package_format == "rpm":
        r.write(f"{STATE}/packages.tsv", "".join(
            f"{p.name}\t{p.version}\t{p.release}\t{p.arch}\n" for p in s.packages))
        _install(r, "rpm", "/usr/bin/rpm")
        _install(r, "pkg-install", "/usr/bin/dnf")
    else:
        r.write(f"{STATE}/packages.tsv", "".join(
            f"{p.name}\t{p.version}\t-\t{p.arch}\n" for p in s.packages))
        _install(r, "dpkg-query", "/usr/bin/dpkg-query")
        _install(r, "pkg-install", "/usr/bin/apt-get")

    if s.initramfs_tool == "lsinitrd":
        _install(r, "lsinitrd", "/usr/bin/lsinitrd")
        _install(r, "dracut", "/usr/bin/dracut")
    elif s.initramfs_tool == "lsinitramfs":
        _install(r, "lsinitrd", "/usr/sbin/lsinitramfs")
        _install(r, "dracut", "/usr/sbin/update-initramfs")
    _boot_loader(r, s)

    dmesg = "\n".join(line.format(kver=kver, cmdline=s.cmdline) for line in s.dmesg) + "\n"
    r.write(f"{STATE}/dmesg", dmesg)
    r.script("/usr/bin/dmesg", f"#!/bin/sh\n# dmesg emulator (gpuconform test bed)\ncat {STATE}/dmesg\n")

    r.script("/usr/sbin/modinfo", _canned("modinfo", [
        ("nvidia", *(_modinfo_nvidia(s) if s.modinfo_nvidia else
                     ("", "modinfo: ERROR: Module nvidia not found.", 1)))],
        "modinfo: ERROR: Module not found (this simulated modinfo knows nvidia)."))
    r.script("/usr/bin/uname", _uname(s))
    r.script("/usr/bin/hostname", "#!/bin/sh\ncat /etc/hostname\n")

    _ld(r, s)

    if s.fabricmanager_version:
        r.script("/usr/bin/nv-fabricmanager", _canned("nv-fabricmanager", [
            ("-v|--version", f"Fabric Manager version is : {s.fabricmanager_version}\n", "", 0)],
            "nv-fabricmanager: use --version (simulated)"))
    if s.toolkit_version:
        _nvidia_ctk(r, s)
    if s.runtime_binary:
        r.script(containerd_configs.RUNTIME_BINARY, _canned("nvidia-container-runtime", [
            ("--version", f"NVIDIA Container Runtime version {s.toolkit_version or '1.17.8'}\n"
                          "commit: f202b80a9b9d0db00d9b1d73c0128c8962c55f4d\nspec: 1.2.1\n\n"
                          "runc version 1.2.5\nspec: 1.2.0\n", "", 0)],
            "nvidia-container-runtime: only --version is simulated"))
    r.write(f"{STATE}/containerd/dump", containerd_configs.dump(s))
    r.script("/usr/bin/containerd", "\n".join([
        "#!/bin/sh", "# containerd emulator (gpuconform test bed): config dump (the loaded config), --version",
        'case "$*" in',
        f"  'config dump') cat {STATE}/containerd/dump ;;",
        f"  --version|-v) echo 'containerd containerd.io {s.containerd_version} "
        "05044ec0a9a75232cad458027ca83437aae3f4da' ;;",
        "  *) echo \"containerd: only 'config dump' and --version are simulated\" >&2; exit 1 ;;",
        "esac", ""]))


def _install(r: _Root, emulator: str, path: str) -> None:
    target = r.path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(EMULATORS / emulator, target)
    target.chmod(0o755)


GPU_COLUMNS = ("index", "name", "uuid", "pci.bus_id", "pci.device_id", "driver_version",
               "persistence_mode", "mig.mode.current", "mig.mode.pending", "ecc.mode.current",
               "ecc.mode.pending", "retired_pages.pending", "remapped_rows.pending",
               "remapped_rows.failure", "memory.total", "compute_cap", "pstate")


def _gpus_tsv(s: Scenario) -> str:
    rows = ["\t".join(GPU_COLUMNS)]
    for g in s.gpus:
        rows.append("\t".join(map(str, (
            g.index, g.name, g.uuid, g.bus_id, g.device_id, s.driver_version or DRIVER,
            g.persistence_mode, g.mig_current, g.mig_pending, g.ecc, g.ecc,
            g.retired_pages_pending, g.remapped_rows_pending, g.remapped_rows_failure,
            g.memory_mib, "9.0", "P0"))))
    return "\n".join(rows) + "\n"


def _mig_tsv(s: Scenario) -> str:
    rows = ["gpu\tprofile\tdevice\tuuid"]
    for g in s.gpus:
        for n, profile in enumerate(g.mig_devices):
            rows.append(f"{g.index}\t{profile}\t{n}\t{stable_uuid('MIG', 'h100', g.index, n)}")
    return "\n".join(rows) + "\n"


def _journal(s: Scenario) -> list[str]:
    out = []
    for line in s.dmesg:
        msg = line.split("] ", 1)[-1].format(kver=s.kernel, cmdline=s.cmdline)
        out.append(f"Nov 30 08:00:06 {s.hostname} kernel: {msg}")
    return out


def _modinfo_nvidia(s: Scenario) -> tuple[str, str, int]:
    on_disk = next((e.version for e in (s.dkms.entries if s.dkms else [])
                    if e.kernel == s.kernel and e.state == "installed"), s.driver_version or DRIVER)
    text = (f"filename:       /lib/modules/{s.kernel}/extra/nvidia.ko.xz\n"
            "import_ns:      DMA_BUF\nalias:          char-major-195-*\n"
            f"version:        {on_disk}\nsupported:      external\nlicense:        Dual MIT/GPL\n"
            f"firmware:       nvidia/{on_disk}/gsp_tu10x.bin\nfirmware:       nvidia/{on_disk}/gsp_ga10x.bin\n"
            "srcversion:     7B5E3D1A0C4F9E2B8D6A1C3\nalias:          pci:v000010DEd*sv*sd*bc03sc02i00*\n"
            "alias:          pci:v000010DEd*sv*sd*bc03sc00i00*\ndepends:        \nretpoline:      Y\n"
            "name:           nvidia\n"
            f"vermagic:       {s.kernel} SMP preempt mod_unload modversions \n"
            "parm:           NvSwitchRegDwords:NvSwitch regkey (charp)\n"
            "parm:           rm_firmware_active:charp\n")
    return text, "", 0


def _uname(s: Scenario) -> str:
    return f"""#!/bin/sh
# uname emulator (gpuconform test bed): the simulated kernel, not the machine's.
[ $# -eq 0 ] && set -- -s
out=
for a in "$@"; do
  case $a in
    -s|--kernel-name) v=Linux ;;
    -r|--kernel-release) v={s.kernel} ;;
    -n|--nodename) v={s.hostname} ;;
    -m|--machine|-p|-i) v=x86_64 ;;
    -o|--operating-system) v=GNU/Linux ;;
    -v|--kernel-version) v="#1 SMP PREEMPT_DYNAMIC" ;;
    -a|--all) v="Linux {s.hostname} {s.kernel} #1 SMP PREEMPT_DYNAMIC x86_64 x86_64 x86_64 GNU/Linux" ;;
    *) echo "uname: invalid option -- '$a'" >&2; exit 1 ;;
  esac
  out="${{out:+$out }}$v"
done
echo "$out"
"""


def _ld(r: _Root, s: Scenario) -> None:
    if s.ld == "absent":
        return
    ld = _canned("ld", [
        ("--version|-v|-V", f"{s.ld_version}\nCopyright (C) 2018 Free Software Foundation, Inc.\n"
                            "This program is free software; you may redistribute it under the terms of\n"
                            "the GNU General Public License version 3 or (at your option) a later version.\n"
                            "This program has absolutely no warranty.\n", "", 0)],
        "ld: no input files")
    r.script("/usr/bin/ld.bfd", ld)
    if s.ld == "not-executable":  # a plain copy that lost its run bit (the article's make.log)
        r.write("/usr/bin/ld", ld, 0o644)
    else:
        r.link("/usr/bin/ld", "ld.bfd")


def _boot_loader(r: _Root, s: Scenario) -> None:
    """The next boot's command line, where grubby (BLS entries) or update-grub edit it."""
    args = " ".join(a for a in s.cmdline.split() if not a.startswith("BOOT_IMAGE="))
    if s.package_format == "rpm":
        r.write(f"/boot/loader/entries/gpusim-{s.kernel}.conf",
                f"title {s.os_release.splitlines()[0]} ({s.kernel})\nversion {s.kernel}\n"
                f"linux /vmlinuz-{s.kernel}\ninitrd /initramfs-{s.kernel}.img\noptions {args}\n")
        _install(r, "grubby", "/usr/sbin/grubby")
    else:
        keep = " ".join(a for a in args.split() if not a.startswith(("root=", "ro")))
        r.write("/etc/default/grub", f'GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX="{keep}"\n')
        r.dir("/boot/grub")
        _install(r, "update-grub", "/usr/sbin/update-grub")


def _nvidia_ctk(r: _Root, s: Scenario) -> None:
    """nvidia-ctk --version, and `runtime configure --runtime=containerd --set-as-default`: it
    writes the config nvidia-ctk would write; containerd dumps it after `systemctl restart`."""
    after = dataclasses.replace(s, containerd_nvidia_runtime=True, containerd_default_runtime="nvidia",
                                containerd_dropin=s.containerd_config_version >= 3)
    r.write(f"{STATE}/containerd/dump-after", containerd_configs.dump(after))
    copies = []
    for path, content in containerd_configs.files(after).items():
        r.write(f"{STATE}/containerd/after{path}", content)
        copies.append(f"mkdir -p {shlex.quote(str(Path(path).parent))}; "
                      f"cp {STATE}/containerd/after{path} {shlex.quote(path)}")
    version = (f"NVIDIA Container Toolkit CLI version {s.toolkit_version}\n"
               "commit: f202b80a9b9d0db00d9b1d73c0128c8962c55f4d")
    r.script("/usr/bin/nvidia-ctk", "\n".join([
        "#!/bin/sh", "# nvidia-ctk emulator (gpuconform test bed): --version, runtime configure for containerd",
        'case "$*" in',
        f"  --version|-v) cat <<'GPUSIM_EOF'\n{version}\nGPUSIM_EOF\n    exit 0 ;;",
        "  'runtime configure --runtime=containerd --set-as-default'*)",
        *(f"    {c}" for c in copies),
        f"    touch {STATE}/containerd/pending",
        "    echo 'INFO Wrote updated config to /etc/containerd/config.toml'",
        "    echo 'INFO It is recommended that containerd daemon be restarted.'; exit 0 ;;",
        "  *) echo 'nvidia-ctk: only --version and runtime configure are simulated' >&2; exit 1 ;;",
        "esac", ""]))
