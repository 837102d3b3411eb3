"""Single-fault patches of a good host: each changes it the way a real host with that one fault
would differ, nothing more."""
from __future__ import annotations

from typing import Callable

from testbed.hosts.scenarios.good import _driver_dmesg, _nouveau_module
from testbed.hosts.scenarios.model import (DRIVER, H100_PCIE, H100_PCIE_DEVICE_ID, OLDER_KERNEL, OTHER_DRIVER, DkmsEntry,
                                           Package, Scenario)

Fault = Callable[[Scenario], None]
FAULTS: dict[str, tuple[str, Fault]] = {}
#: The good host a fault is made on, where it is not the H100 worker (gpu-good).
FAULT_BASE: dict[str, str] = {}


def fault(name: str, description: str, on: str = "gpu-good"):
    def register(fn: Fault) -> Fault:
        FAULTS[name] = (description, fn)
        if on != "gpu-good":
            FAULT_BASE[name] = on
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


@fault("fabricmanager-removed-debian", "apt-get remove (not purge) of the fabric manager: dpkg keeps it as rc "
                                "with its version, its program and unit file are gone", on="good-debian")
def _fabricmanager_removed(s: Scenario) -> None:
    for p in s.packages:
        if "fabric" in p.name:
            p.dpkg_state = "rc"
    s.fabricmanager_version = None
    _unit(s, "nvidia-fabricmanager.service", load_state="not-found", active_state="inactive",
          sub_state="dead", unit_file_state="")
    s.processes.remove("nv-fabricmanager")


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


@fault("toolkit-from-operator", "the container toolkit comes from the GPU Operator's toolkit container "
                                "(/usr/local/nvidia/toolkit, off PATH), not the package the profile expects")
def _toolkit_from_operator(s: Scenario) -> None:
    # NVIDIA/gpu-operator deployments/gpu-operator/values.yaml: toolkit.installDir "/usr/local/nvidia"
    # (api/nvidia/v1/clusterpolicy_types.go ToolkitSpec.InstallDir); the toolkit container puts
    # nvidia-container-runtime and nvidia-ctk in <installDir>/toolkit (controllers/object_controls.go
    # joins InstallDir with "toolkit/nvidia-cdi-hook" for the operands) and points containerd's
    # `nvidia` runtime there (BinaryName /usr/local/nvidia/toolkit/nvidia-container-runtime).
    s.toolkit_dir = "/usr/local/nvidia/toolkit"
    s.packages = [p for p in s.packages if p.name != "nvidia-container-toolkit"]


@fault("driver-container", "the driver comes from the GPU Operator's driver container (the chart's default, "
                           "driver.enabled: true), not installed on the host as the profile declares")
def _driver_container(s: Scenario) -> None:
    # NVIDIA/gpu-operator cmd/nvidia-validator/main.go: defaultDriverInstallDir "/run/nvidia/driver";
    # runValidation finds no nvidia-smi on the host, validates the container's and writes driver-ready
    # with IS_HOST_DRIVER=false and the container's roots (getDriverInfo, cmd/nvidia-validator/driver.go:
    # the dev root is the driver root, which has a /dev)
    s.driver_root = "/run/nvidia/driver"
    s.operator_validations = {**(s.operator_validations or {}), "driver-ready": (
        "IS_HOST_DRIVER=false\nNVIDIA_DRIVER_ROOT=/run/nvidia/driver\nDRIVER_ROOT_CTR_PATH=/driver-root\n"
        "NVIDIA_DEV_ROOT=/run/nvidia/driver\nDEV_ROOT_CTR_PATH=/driver-root\n")}
    # Nothing of the driver is on the host: no DKMS build and no nvidia.ko under its /lib/modules (the
    # container builds or ships its modules and loads them, NVIDIA/gpu-driver-container
    # ubuntu24.04/nvidia-driver _load_driver), no fabric manager package and no units: the container
    # starts nvidia-persistenced and, on NVSwitch systems, nv-fabricmanager itself (_start_daemons),
    # seen in the host's /proc (the DaemonSet's hostPID: true, gpu-operator
    # assets/state-driver/0500_daemonset.yaml)
    s.dkms = None
    s.modinfo_nvidia = False
    s.packages = [p for p in s.packages if p.name not in ("dkms", "nvidia-fabric-manager")]
    s.units = [u for u in s.units or [] if u.name not in ("nvidia-persistenced.service", "nvidia-fabricmanager.service")]


@fault("cdi-specs-missing-debian", "CDI node after a reboot: /var/run is a tmpfs, nvidia-cdi-refresh "
                                   "did not run and the device plugin has not rewritten its spec", on="cdi-debian")
def _cdi_specs_missing(s: Scenario) -> None:
    s.cdi_specs = {}


@fault("cdi-disabled-debian", "CDI node whose containerd config turns enable_cdi off", on="cdi-debian")
def _cdi_disabled(s: Scenario) -> None:
    s.containerd_enable_cdi = False


@fault("operator-cdi-node-debian", "a GPU Operator v25.10 CDI node in the pool the profile declares "
                                   "nvidia-as-default-runtime", on="cdi-debian")
def _operator_cdi_node(s: Scenario) -> None:
    """Nothing changes on the host: the fault is the pool's profile (no cdi-* group matches)."""


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


@fault("pcie-link-x8", "GPU 3's PCIe link trained at x8 of x16 (a badly seated GPU or riser)")
def _pcie_link_x8(s: Scenario) -> None:
    s.gpus[3].pcie_width = 8


@fault("pcie-gen3-busy", "GPU 2 runs a job with its PCIe link at Gen3 of Gen5")
def _pcie_gen3_busy(s: Scenario) -> None:
    s.gpus[2].idle, s.gpus[2].pcie_gen = False, 3


@fault("compute-mode-prohibited", "GPU 4 was taken out of service with nvidia-smi -i 4 -c PROHIBITED "
                                  "and never given back")
def _compute_mode_prohibited(s: Scenario) -> None:
    s.gpus[4].compute_mode = "Prohibited"


@fault("clocks-hw-thermal", "GPU 5 overheats: HW slowdown and HW thermal slowdown engaged")
def _clocks_hw_thermal(s: Scenario) -> None:
    s.gpus[5].clock_limiters = ("hw_slowdown", "hw_thermal_slowdown")


@fault("sram-uncorrectable", "GPU 1 has counted 2 uncorrectable SRAM ECC errors")
def _sram_uncorrectable(s: Scenario) -> None:
    s.gpus[1].sram_uncorrectable = 2


@fault("nvlink-down", "GPU 4's NVLink 7 is down (<inactive>) and its link 0 retrained twice")
def _nvlink_down(s: Scenario) -> None:
    s.gpus[4].nvlinks_down = (7,)
    s.gpus[4].nvlink_recovery_errors = 2


@fault("validator-plugin-not-ready", "the GPU Operator validator stopped at the device plugin: no "
                                     "plugin-ready, no cuda-ready")
def _validator_plugin_not_ready(s: Scenario) -> None:
    assert s.operator_validations is not None
    for name in ("plugin-ready", "cuda-ready"):
        del s.operator_validations[name]


@fault("dcgm-row-remap", "DCGM's level-1 diagnostic fails GPU 2's Page Retirement/Row Remap test", on="dcgm-good")
def _dcgm_row_remap(s: Scenario) -> None:
    s.dcgm_failures = {"Page Retirement/Row Remap": (
        2, "GPU 2 had uncorrectable memory errors and row remapping failed. Drain the GPU and reset it or reboot the node.")}


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


@fault("debian-in-rhel-pool", "an Ubuntu worker (the good Debian-family host) in the pool the profile "
                              "declares RHEL-family", on="good-debian")
def _debian_in_rhel_pool(s: Scenario) -> None:
    """Nothing on the host differs from the good Debian-family worker: it is where it stands that
    is wrong (its name matches no group declaring os_family: debian)."""
    s.hostname = "gpu-worker-9"


def _unit(s: Scenario, name: str, **changes: str) -> None:
    assert s.units is not None
    unit = next(u for u in s.units if u.name == name)
    for key, value in changes.items():
        setattr(unit, key, value)


@fault("os-release-older", "an older release of the profile's OS (RED OS 7.3 where the pool runs 8): the host "
                           "was never upgraded")
def _os_release_older(s: Scenario) -> None:
    s.os_release = ('NAME="RED OS"\nVERSION="7.3"\nID="redos"\nID_LIKE="rhel fedora"\nVERSION_ID="7.3"\n'
                    'PRETTY_NAME="RED OS 7.3"\nANSI_COLOR="0;31"\nCPE_NAME="cpe:/o:red-soft:redos:7.3"\n')


@fault("containerd-2-in-1x-pool", "containerd 2.x installed where the pool runs 1.7: its config is version 3 "
                                  "(nvidia-ctk's conf.d drop-in and imports)")
def _containerd_2_in_1x_pool(s: Scenario) -> None:
    s.packages = [p for p in s.packages if p.name != "containerd.io"] + [Package("containerd.io", "2.1.4", "1.el8")]
    s.containerd_version = "2.1.4"
    s.containerd_config_version = 3
    s.containerd_dropin = True
