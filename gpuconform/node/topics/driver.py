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
    query_step("smi_compute_mode", ("index", "compute_mode")),
)
TOOLS = ("nvidia-smi",)
COMPANIONS: dict = {}


def _compute_modes(text: str) -> dict[int, str | None]:
    rows = nvidia_smi.parse_query(text, ("index", "compute_mode"))
    if any(not (r["index"] or "").isdigit() for r in rows):
        raise ValueError("a GPU index is not a number")
    return {int(r["index"]): r["compute_mode"] for r in rows}


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
    def compute_modes(self) -> dict[int, str]:
        """Each GPU's compute mode (``nvidia-smi -c``): Default, Exclusive_Process or Prohibited."""
        what = "nvidia-smi compute mode query"
        modes = self._query(self.section("smi_compute_mode"), what, _compute_modes)
        missing = sorted({g.index for g in self.gpus} - {i for i, m in modes.items() if m is not None})
        if missing:
            raise CannotTell(f"{what} gave no compute mode for GPU {', '.join(map(str, missing))}")
        return modes

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
           "means the kernel module and user-space versions differ or the module is not loaded. Where the "
           "GPU Operator's driver container provides the driver (driver-ready: IS_HOST_DRIVER=false), install "
           "none on the host beside it: the node layer judges a driver installed on the host (driver.install), "
           "so either set the ClusterPolicy's driver.enabled=false and install the profile's driver on the "
           "host, or judge that pool with the cluster layer only (pytest -m cluster)",
    "evidence": ["smi_gpus", "validations"],
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

# nvidia-smi --help-query-gpu, compute_mode: "'Prohibited' means no contexts are allowed per device
# (no compute apps)"; nvidia-smi(1) -c/--compute-mode sets it (0/DEFAULT, 2/PROHIBITED,
# 3/EXCLUSIVE_PROCESS) and it lasts until the driver reloads. Prohibited is how a GPU is taken out
# of service by hand; left so, the node still advertises the GPU and every pod on it fails.
GPU_COMPUTE_MODE: CheckText = {
    "title": "No GPU is in compute mode Prohibited",
    "fix": "nvidia-smi -i <gpu> -c DEFAULT  (find what set Prohibited first: a drain left in place, a health "
           "checker that took the GPU out; if the GPU was taken out for a fault, drain the node instead)",
    "evidence": ["smi_compute_mode"],
}
