"""What the node suite must say about each simulated host (profiles/seed-h100.yaml).

``fails``: the exact set of checks with verdict fail or error, each with a regular expression
(case-insensitive) its message must match, so that the message names the cause. A parametrized
check is written ``check_id[param]``. ``blocked`` / ``skipped``: checks that must at least carry
that verdict. Everything not listed must pass (or be skipped / blocked for its own reason).
"""
from __future__ import annotations

import dataclasses

DRIVER_CHAIN = frozenset({
    "node.driver.version", "node.driver.device_nodes", "node.smi.runs", "node.gpu.count",
    "node.gpu.product", "node.smi.driver_version", "node.gpu.persistence_mode", "node.mig.mode",
    "node.mig.no_pending", "node.gpu.ecc_enabled", "node.gpu.retired_pages", "node.gpu.row_remap",
})


@dataclasses.dataclass(frozen=True)
class Expect:
    fails: dict[str, str] = dataclasses.field(default_factory=dict)
    blocked: frozenset[str] = frozenset()
    skipped: frozenset[str] = frozenset()


EXPECTED: dict[str, Expect] = {
    "gpu-good": Expect(),
    "good-mig": Expect(),          # profile group "*-mig" expects MIG enabled
    "good-debian": Expect(),
    "cdi-debian": Expect(),        # profile group cdi-*: injection cdi
    "cdi-specs-missing-debian": Expect({"node.containerd.cdi": r"no CDI spec gives workloads NVIDIA GPUs.*spec files: none"}),
    "cdi-disabled-debian": Expect({"node.containerd.cdi": r"enable_cdi is off"}),
    # the same host in a pool whose profile declares nvidia as the default runtime
    "operator-cdi-node-debian": Expect({"node.containerd.nvidia_default":
                                        r"'runc'.*injects GPUs through CDI \(/var/run/cdi/.*nvidia\.com/gpu.*"
                                        r"container_runtime\.injection: cdi"}),
    "dcgm-good": Expect(),         # profile group dcgm-*: health.dcgm_diag 1
    "dcgm-row-remap": Expect({"node.gpu.dcgm_diag": r"dcgmi diag -r 1: 1 failed: Page Retirement/Row Remap GPU 2: "
                                                   r"GPU 2 had uncorrectable memory errors"}),
    "upgraded-debian": Expect(),   # an old branch's fabric manager in rc, another un: not installed
    "nouveau-loaded": Expect({"node.nouveau.not_loaded": r"nouveau"}),
    "nouveau-not-blacklisted": Expect({"node.nouveau.blacklisted": r"blacklist nouveau"}),
    # the good hosts' initramfs lists etc/modprobe.d/blacklist-nouveau.conf (dracut copies
    # modprobe.d): only the module itself is the fault.
    "nouveau-in-initramfs": Expect({"node.nouveau.not_in_initramfs": r"nouveau\.ko"}),
    "cmdline-missing-sig-enforce": Expect({
        "node.kernel.cmdline_required[module.sig_enforce=0]": r"module\.sig_enforce=0"}),
    "cmdline-has-lockdown": Expect({
        "node.kernel.cmdline_forbidden[lockdown]": r"lockdown=integrity",
        "node.signing.lockdown": r"integrity",
        # lockdown enforces module signatures: an unsigned DKMS rebuild would not load
        "node.signing.dkms_rebuild_signed": r"sign",
    }),
    "sig-enforce-blocks-driver": Expect(
        {
            "node.signing.enforcement": r"sig_enforce=Y",
            "node.signing.driver_loads": r"not loaded",
            "node.driver.modules_loaded": r"nvidia",
        },
        # without the driver both daemons fail at start: blocked by the driver, not failed again
        blocked=DRIVER_CHAIN | {"node.persistenced.active", "node.persistenced.running",
                                "node.fabricmanager.active"}),
    "no-kernel-headers": Expect({"node.kernel.headers": r"build"}),
    "dkms-added": Expect({"node.dkms.nvidia_installed": r"\badded\b"}),
    "dkms-built": Expect({"node.dkms.nvidia_installed": r"\bbuilt\b"}),
    "dkms-broken": Expect({"node.dkms.nvidia_installed": r"\bbroken\b"}),
    "dkms-other-kernel-only": Expect({"node.dkms.nvidia_installed": r"6\.12\.20\.red80"}),
    "dkms-wrong-version": Expect({"node.dkms.nvidia_installed": r"580\.82\.07"}),
    "ld-not-executable": Expect({"node.toolchain.ld_runs": r"not executable|permission denied"}),
    "driver-wrong-version": Expect({
        "node.driver.version": r"580\.82\.07",
        "node.smi.driver_version": r"580\.82\.07",
        "node.dkms.nvidia_installed": r"580\.82\.07",
        # fabric manager 580.95.05 must equal the driver (580.82.07) and refuses to start
        "node.fabricmanager.version": r"580\.82\.07",
        "node.fabricmanager.active": r"failed",
    }),
    "gpu-missing": Expect({"node.gpu.count": r"\b7\b", "node.driver.device_nodes": r"/dev/nvidia7"}),
    "wrong-product": Expect({"node.gpu.product": r"H100 PCIe"}),
    "fabricmanager-mismatch": Expect({"node.fabricmanager.version": r"580\.82\.07",
                                      "node.fabricmanager.active": r"failed"}),
    "fabricmanager-removed-debian": Expect({
        "node.fabricmanager.version": r"no fabric manager package is installed.*"
                                      r"nvidia-fabricmanager-580 580\.95\.05-1 \(config-files\)",
        "node.fabricmanager.active": r"not-found"}),
    "fabricmanager-inactive": Expect({"node.fabricmanager.active": r"failed"}),
    "persistenced-inactive": Expect({
        "node.persistenced.enabled": r"disabled",
        "node.persistenced.active": r"inactive",
        "node.persistenced.running": r"nvidia-persistenced",
    }),
    "persistence-disabled": Expect({"node.gpu.persistence_mode": r"disabled|not enabled"}),
    "toolkit-missing": Expect({"node.toolkit.nvidia_ctk": r"nvidia-ctk"}),
    "runtime-binary-missing": Expect({"node.toolkit.runtime_binary": r"/usr/bin/nvidia-container-runtime is missing"}),
    # the operator's toolkit: nothing at the profile's paths, containerd points elsewhere
    "toolkit-from-operator": Expect({
        "node.toolkit.nvidia_ctk": r"nvidia-ctk is not installed",
        "node.toolkit.runtime_binary": r"/usr/bin/nvidia-container-runtime is missing",
        "node.containerd.nvidia_runtime": r"/usr/local/nvidia/toolkit/nvidia-container-runtime.*"
                                          r"expected '/usr/bin/nvidia-container-runtime'"},
        blocked=frozenset({"node.containerd.nvidia_default"})),
    # the GPU Operator's driver container provides the driver: nothing the profile's host driver
    # needs is on the host (DKMS, nvidia-smi, device nodes in /dev, the daemons' units and packages)
    "driver-container": Expect({
        "node.dkms.nvidia_installed": r"dkms is not installed on the host",
        "node.driver.device_nodes": r"missing device nodes: /dev/nvidiactl",
        "node.smi.runs": r"not installed on the host: its driver is the GPU Operator's driver container's "
                         r"\(driver-ready: IS_HOST_DRIVER=false, NVIDIA_DRIVER_ROOT=/run/nvidia/driver\)",
        "node.fabricmanager.version": r"no fabric manager package is installed",
        "node.fabricmanager.active": r"nvidia-fabricmanager\.service is inactive \(dead\), not-found",
        "node.operator.validations": r"IS_HOST_DRIVER=false: the validator validated a driver container",
        "node.persistenced.enabled": r"nvidia-persistenced\.service is not-found",
        "node.persistenced.active": r"nvidia-persistenced\.service is inactive \(dead\), not-found"},
        blocked=frozenset({"node.gpu.count", "node.gpu.product", "node.smi.driver_version",
                           "node.gpu.persistence_mode", "node.mig.mode"})),
    "containerd-no-nvidia-runtime": Expect({"node.containerd.nvidia_runtime": r"nvidia"},
                                           blocked=frozenset({"node.containerd.nvidia_default"})),
    "containerd-not-default": Expect({"node.containerd.nvidia_default": r"runc"}),
    "bpf-jit-harden-2": Expect({"node.sysctl[net.core.bpf_jit_harden]": r"\b2\b"}),
    "mig-pending": Expect({"node.mig.no_pending": r"GPU 3"}),
    "xid-in-log": Expect({"node.kernel.no_xid": r"Xid 79 ×1: hardware, reboot — drain and reboot.*first: .*fallen off"}),
    "pcie-link-x8": Expect({"node.gpu.pcie_link": r"GPU 3: x8 of x16"}),
    "pcie-gen3-busy": Expect({"node.gpu.pcie_link": r"GPU 2: Gen3 of Gen5 while busy"}),
    "compute-mode-prohibited": Expect({"node.gpu.compute_mode": r"Prohibited on GPU 4: no process can create"}),
    "clocks-hw-thermal": Expect({"node.gpu.clock_events": r"GPU 5: hw_slowdown, hw_thermal_slowdown"}),
    "sram-uncorrectable": Expect({"node.gpu.memory_errors": r"GPU 1: 2 uncorrectable SRAM errors \(at most 0\)"}),
    "nvlink-down": Expect({"node.gpu.nvlink": r"GPU 4: 17 of 18 links up; GPU 4 link 0: 2 Recovery errors"}),
    "validator-plugin-not-ready": Expect({"node.operator.validations": r"lacks cuda-ready, plugin-ready"}),
    "ecc-disabled": Expect({"node.gpu.ecc_enabled": r"GPU 5"}),
    "row-remap-failure": Expect({"node.gpu.row_remap": r"GPU 2"}),
    # the release is judged only within the family (blocked); its containerd 2.x is another generation
    "debian-in-rhel-pool": Expect({"node.os.family": r"Ubuntu.*debian.*expected rhel",
                                   "node.containerd.config_version": r"version 3 \(containerd config dump\), "
                                                                     r"expected version 2"},
                                  blocked=frozenset({"node.os.version"})),
    "os-release-older": Expect({"node.os.version": r"RED OS 7\.3 \(VERSION_ID=7\.3\), expected release 8\b"}),
    "containerd-2-in-1x-pool": Expect({"node.containerd.config_version": r"version 3 \(containerd config dump\), "
                                                                         r"expected version 2"}),
    # the profile requires both services: without systemd their unit state cannot be read
    "no-systemd": Expect({f"node.{unit}.{state}": r"systemd is not the init system"
                          for unit, state in (("persistenced", "enabled"), ("persistenced", "active"),
                                              ("fabricmanager", "active"))}),
    "no-systemd-persistence-off": Expect(
        {"node.persistenced.running": r"no nvidia-persistenced process",
         "node.gpu.persistence_mode": r"not Enabled on GPU 0, 1, 2, 3, 4, 5, 6, 7",
         **{f"node.{unit}.{state}": r"systemd is not the init system"
            for unit, state in (("persistenced", "enabled"), ("persistenced", "active"), ("fabricmanager", "active"))}}),
}
