"""The tools of a simulated host: small sh/awk emulators (``emulators/``) and canned answers that
reply from the host's state under :data:`STATE`, written from its :class:`Scenario`; a tool the
scenario lacks is simply not there."""
from __future__ import annotations

import dataclasses
import json
import shlex
import shutil
from pathlib import Path

from testbed.hosts import containerd_configs
from testbed.hosts.rootwriter import Root
from testbed.hosts.scenarios import DRIVER, Scenario, stable_uuid

EMULATORS = Path(__file__).parent / "emulators"
STATE = "/var/lib/gpusim"


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


def install(r: Root, s: Scenario) -> None:
    """Every tool the scenario has, each answering from the host's state under STATE."""
    kver = s.kernel
    # nvidia-smi: always installed (userspace driver package); fails like the real one without
    # the kernel driver.
    state = "loaded" if s.driver_version and "nvidia" in s.loaded else "absent"
    r.write(f"{STATE}/nvidia-smi/driver", f"{state} {s.driver_version or DRIVER} {s.cuda_version}\n")
    r.write(f"{STATE}/nvidia-smi/gpus.tsv", _gpus_tsv(s))
    r.write(f"{STATE}/nvidia-smi/mig.tsv", _mig_tsv(s))
    r.write(f"{STATE}/nvidia-smi/nvlink.tsv", _nvlink_tsv(s))
    if s.dcgm_failures is not None:
        failed = bool(s.dcgm_failures)
        r.script("/usr/bin/dcgmi", _canned("dcgmi", [("diag*-r*1*-j*", _dcgm_diag_json(s), "", 226 if failed else 0)],
                                           "dcgmi: only `diag -r 1 -j` is simulated"))
    driver = s.driver_root or ""  # the driver's own files: on the host, or in the driver container's rootfs
    _install(r, "nvidia-smi", f"{driver}/usr/bin/nvidia-smi")
    if s.driver_root:  # what the validator preloads to run that nvidia-smi (gpu-operator internal/driver/root.go)
        r.write(f"{driver}/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", b"\x7fELF simulated libnvidia-ml\n")

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
            ("*-k*short-monotonic*", "\n".join(_journal(s, monotonic=True)) + "\n", "", 0),
            ("*-k*", "\n".join(journal) + "\n", "", 0)], "journalctl: only -k is simulated"))

    if s.package_format == "rpm":
        r.write(f"{STATE}/packages.tsv", "".join(
            f"{p.name}\t{p.version}\t{p.release}\t{p.arch}\n" for p in s.packages))
        _install(r, "rpm", "/usr/bin/rpm")
        _install(r, "pkg-install", "/usr/bin/dnf")
    else:
        r.write(f"{STATE}/packages.tsv", "".join(
            f"{p.name}\t{p.version}\t{p.dpkg_state}\t{p.arch}\n" for p in s.packages))
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
        r.script(f"{driver}/usr/bin/nv-fabricmanager", _canned("nv-fabricmanager", [
            ("-v|--version", f"Fabric Manager version is : {s.fabricmanager_version}\n", "", 0)],
            "nv-fabricmanager: use --version (simulated)"))
    if s.toolkit_version:
        _nvidia_ctk(r, s)
    if s.runtime_binary:
        r.script(s.runtime_path, _canned("nvidia-container-runtime", [
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


def _install(r: Root, emulator: str, path: str) -> None:
    target = r.path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(EMULATORS / emulator, target)
    target.chmod(0o755)


LIMITERS = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown", "sw_thermal_slowdown")
GPU_COLUMNS = ("index", "name", "uuid", "pci.bus_id", "pci.device_id", "driver_version",
               "persistence_mode", "mig.mode.current", "mig.mode.pending", "ecc.mode.current",
               "ecc.mode.pending", "retired_pages.pending", "remapped_rows.pending",
               "remapped_rows.failure", "memory.total", "compute_cap", "compute_mode", "pstate",
               "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
               "clocks_event_reasons.gpu_idle", *(f"clocks_event_reasons.{x}" for x in LIMITERS),
               "remapped_rows.uncorrectable", "ecc.errors.uncorrected.aggregate.sram",
               "ecc.errors.corrected.aggregate.sram")


def _active(on: bool) -> str:
    return "Active" if on else "Not Active"


def _gpus_tsv(s: Scenario) -> str:
    rows = ["\t".join(GPU_COLUMNS)]
    for g in s.gpus:
        rows.append("\t".join(map(str, (
            g.index, g.name, g.uuid, g.bus_id, g.device_id, s.driver_version or DRIVER,
            g.persistence_mode, g.mig_current, g.mig_pending, g.ecc, g.ecc,
            g.retired_pages_pending, g.remapped_rows_pending, g.remapped_rows_failure,
            g.memory_mib, "9.0", g.compute_mode, "P8" if g.idle else "P0",
            g.pcie_gen, g.pcie_gen_max, g.pcie_width, g.pcie_width_max,
            _active(g.idle), *(_active(x in g.clock_limiters) for x in LIMITERS),
            g.remapped_rows_uncorrectable, g.sram_uncorrectable, g.sram_correctable))))
    return "\n".join(rows) + "\n"


#: What `dcgmi diag -r 1` runs (its Deployment category), in DCGM 3.x's JSON (NVIDIA/DCGM issue #139,
#: #55 for the names); the exit status on a failed test is a guess of this bed (DCGM's
#: DCGM_ST_NVVS_ERROR, 226 as an unsigned byte), the suite reads the JSON whatever it is.
DCGM_LEVEL1 = ("Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks", "Persistence Mode",
               "Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom")


def _dcgm_diag_json(s: Scenario) -> str:
    failures = s.dcgm_failures or {}
    tests = []
    for name in DCGM_LEVEL1:
        results = [{"gpu_id": str(g.index), "status": "Fail" if name in failures and failures[name][0] == g.index
                    else "Pass", **({"info": failures[name][1]} if name in failures and failures[name][0] == g.index
                                    else {})} for g in s.gpus]
        tests.append({"name": name, "results": results})
    return json.dumps({"DCGM GPU Diagnostic": {"test_categories": [{"category": "Deployment", "tests": tests}]},
                       "version": "3.3.9"}, indent="\t")


def _nvlink_tsv(s: Scenario) -> str:
    """gpu, link, what `nvidia-smi nvlink -s` shows, and its Replay/Recovery/CRC counters."""
    rows = ["gpu\tlink\tspeed\treplay\trecovery\tcrc"]
    for g in s.gpus:
        for link in range(g.nvlinks):
            speed = "<inactive>" if link in g.nvlinks_down else "26.562 GB/s"
            rows.append(f"{g.index}\t{link}\t{speed}\t0\t{g.nvlink_recovery_errors if link == 0 else 0}\t0")
    return "\n".join(rows) + "\n"


def _mig_tsv(s: Scenario) -> str:
    rows = ["gpu\tprofile\tdevice\tuuid"]
    for g in s.gpus:
        for n, profile in enumerate(g.mig_devices):
            rows.append(f"{g.index}\t{profile}\t{n}\t{stable_uuid('MIG', 'h100', g.index, n)}")
    return "\n".join(rows) + "\n"


def _journal(s: Scenario, monotonic: bool = False) -> list[str]:
    """The kernel's lines as journalctl prints them: short (wall clock) or short-monotonic (the
    seconds since boot of the dmesg line, as `[    5.912311] host kernel: …`)."""
    out = []
    for line in s.dmesg:
        stamp, _, msg = line.partition("] ")
        msg = msg.format(kver=s.kernel, cmdline=s.cmdline)
        out.append(f"{stamp}] {s.hostname} kernel: {msg}" if monotonic else f"Nov 30 08:00:06 {s.hostname} kernel: {msg}")
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


def _ld(r: Root, s: Scenario) -> None:
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


def _boot_loader(r: Root, s: Scenario) -> None:
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


def _nvidia_ctk(r: Root, s: Scenario) -> None:
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
    r.script(f"{s.toolkit_dir}/nvidia-ctk", "\n".join([
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
