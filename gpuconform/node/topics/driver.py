"""The NVIDIA driver: its version in /proc, its device nodes, and nvidia-smi's list of GPUs."""
from __future__ import annotations

from functools import cached_property

from gpuconform.errors import CannotTell
from gpuconform.node.topic import Base, CheckText, Section, Step, query_step
from gpuconform.parsers import host, nvidia_smi

STEPS = (
    Step("driver_version", "cat /proc/driver/nvidia/version", "cat /proc/driver/nvidia/version"),
    Step("dev_nodes", "ls -l /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia[0-9]*",
         "ls -l /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia[0-9]*"),
    query_step("smi_gpus", nvidia_smi.GPU_FIELDS),
    Step("smi_list", "$T nvidia-smi -L", "nvidia-smi -L"),
)
TOOLS = ("nvidia-smi",)
COMPANIONS: dict = {}


class Facts(Base):
    @cached_property
    def driver_proc_version(self) -> nvidia_smi.DriverVersion | None:
        sec = self.section("driver_version")
        return nvidia_smi.parse_proc_version(sec.out) if sec.ok else None

    @cached_property
    def char_devices(self) -> frozenset[str]:
        return host.parse_char_devices(self.section("dev_nodes").out)

    @cached_property
    def smi(self) -> Section:
        return self.section("smi_gpus")

    @cached_property
    def gpus(self) -> list[nvidia_smi.GpuRow]:
        rows = self._query(self.smi, "nvidia-smi", nvidia_smi.parse_gpus)
        if not rows:  # no data is not "no GPU is wrong"
            raise CannotTell(f"nvidia-smi exited {self.smi.rc} but listed no GPU")
        return rows

    @cached_property
    def gpu_list(self) -> list[nvidia_smi.ListedGpu]:
        sec = self.section("smi_list")
        return nvidia_smi.parse_list(sec.out) if sec.ok else []


# -- the checks' words (their checks: tests/node/test_driver.py)

DRIVER_MODULES_LOADED: CheckText = {
    "title": "NVIDIA kernel modules nvidia and nvidia_uvm are loaded",
    "fix": {"rhel": "modprobe -vv nvidia && modprobe nvidia_uvm; if it fails: 'Required key not available' → "
                    "node.signing.*; 'Module nvidia not found' → dkms install (node.dkms.nvidia_installed)",
            "default": "modprobe -vv nvidia && modprobe nvidia_uvm, and read the error it prints"},
    "evidence": ["proc_modules"],
}

DRIVER_VERSION: CheckText = {
    "title": "Loaded NVIDIA driver is the profile's version",
    "fix": "install the profile's driver version (dnf module install nvidia-driver:<branch>-dkms), reboot",
    "evidence": ["driver_version"],
}

DRIVER_DEVICE_NODES: CheckText = {
    "title": "NVIDIA device nodes exist, one per GPU",
    "fix": "run `nvidia-smi` once (or nvidia-modprobe -c0 -u) to create /dev/nvidia*; "
           "persistenced keeps them; a missing /dev/nvidiaN means a GPU the driver did not initialise",
    "evidence": ["dev_nodes"],
}

SMI_RUNS: CheckText = {
    "title": "nvidia-smi runs and talks to the driver",
    "fix": "install the NVIDIA utilities matching the driver; 'couldn't communicate with the NVIDIA driver' "
           "means the kernel module and user-space versions differ or the module is not loaded",
    "evidence": ["smi_gpus"],
}

GPU_COUNT: CheckText = {
    "title": "GPU count matches the profile",
    "fix": "a GPU missing from nvidia-smi: check `lspci -d 10de:`, the Xid log, reseat/replace the GPU",
    "evidence": ["smi_gpus"],
}

GPU_PRODUCT: CheckText = {
    "title": "Every GPU is the profile's model",
    "fix": "the host carries other GPUs than the profile says: fix the profile (a group for this host) "
           "or move the host to the right pool",
    "evidence": ["smi_gpus"],
}

SMI_DRIVER_VERSION: CheckText = {
    "title": "nvidia-smi reports the profile's driver version",
    "fix": "user-space and kernel driver must be one version: reinstall the driver packages and reboot",
    "evidence": ["smi_gpus"],
}
