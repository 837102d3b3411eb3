"""The NVIDIA driver: its version in /proc, its device nodes, and nvidia-smi's list of GPUs."""
from __future__ import annotations

from functools import cached_property

from gpuconform.errors import CannotTell
from gpuconform.node.topic import Base, Section, Step, query_step
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
