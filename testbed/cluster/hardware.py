"""The hardware of the simulated GPU workers, as NVIDIA's tools on a real node report it.

These facts come from real captures (shared/reference/formats.md), not from the suite:
* the PCI device ids: `lspci` of real H100 SXM5 / H200 hosts (formats.md 3.7 "10de:2330",
  3.8 "10de:2335"), written as mig-parted's device filters write them (0x233010DE);
* names, memory, compute capability: `nvidia-smi` tables (formats.md 3.1; the H200 from
  shared/reference/real-gpu-host-h200.md) and a real H100 node's GPU Feature Discovery labels
  (formats.md 5.1);
* MIG GPU-instance profiles with their instance counts, SM/CE/DEC/ENC/JPEG/OFA columns
  (`nvidia-smi mig -lgip`, formats.md 3.7 / 3.8) and placements (`nvidia-smi mig -lgipp`, 3.7:
  start positions and size in memory slices; the H200's GH100 shares the H100's placements).
* H100 NVL and L40S, from published data (cited at each): a real H100 NVL node's GFD labels and
  the `nvidia-smi mig -lgip` capture NVIDIA posted with its mig-parted support; a real L40S
  node's GFD labels. GPU Feature Discovery's gpu.family is k8s-device-plugin
  internal/lm/resource.go getArchFamily: compute 8.9 is "ada-lovelace" (8.x below 8.9 "ampere").
* No A30 here: no `-lgip`/`-lgipp` capture of it was found (its engines and placements unknown).
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class MigProfile:
    name: str                    # "1g.10gb", "1g.10gb+me"
    starts: tuple[int, ...]      # memory-slice positions a GPU instance may start at (-lgipp)
    size: int                    # memory slices it occupies
    sm: int                      # streaming multiprocessors (-lgip SM)
    engines: dict[str, int]      # copy, decoder, encoder, jpeg, ofa (-lgip CE DEC ENC JPEG OFA)

    @property
    def gpu_slices(self) -> int:
        return int(self.name.split("g.", 1)[0])


@dataclasses.dataclass(frozen=True)
class Gpu:
    device_id: str               # PCI device + vendor, as mig-parted's device-filter writes it
    smi_name: str                # as nvidia-smi prints it
    memory_mib: int
    family: str
    compute: tuple[int, int]
    mig_profiles: tuple[MigProfile, ...] = ()

    @property
    def product_label(self) -> str:
        """GPU Feature Discovery's nvidia.com/gpu.product: the name with dashes for spaces."""
        return self.smi_name.replace(" ", "-")

    def profile(self, name: str) -> MigProfile | None:
        return next((p for p in self.mig_profiles if p.name == name), None)


def _engines(ce: int, dec: int, enc: int, jpeg: int, ofa: int) -> dict[str, int]:
    return {"copy": ce, "decoder": dec, "encoder": enc, "jpeg": jpeg, "ofa": ofa}


def _gh100_profiles(mem: dict[str, str]) -> tuple[MigProfile, ...]:
    """GH100's seven GPU-instance profiles (formats.md 3.7), named by this model's memory sizes."""
    return (
        MigProfile(f"1g.{mem['1']}", (0, 1, 2, 3, 4, 5, 6), 1, 16, _engines(1, 1, 0, 1, 0)),
        MigProfile(f"1g.{mem['1']}+me", (0, 1, 2, 3, 4, 5, 6), 1, 16, _engines(1, 1, 0, 1, 1)),
        MigProfile(f"1g.{mem['2']}", (0, 2, 4, 6), 2, 26, _engines(1, 1, 0, 1, 0)),
        MigProfile(f"2g.{mem['2']}", (0, 2, 4), 2, 32, _engines(2, 2, 0, 2, 0)),
        MigProfile(f"3g.{mem['4']}", (0, 4), 4, 60, _engines(3, 3, 0, 3, 0)),
        MigProfile(f"4g.{mem['4']}", (0,), 4, 64, _engines(4, 4, 0, 4, 0)),
        MigProfile(f"7g.{mem['8']}", (0,), 8, 132, _engines(8, 7, 0, 7, 1)),
    )


H100_SXM5_80GB = Gpu("0x233010DE", "NVIDIA H100 80GB HBM3", 81559, "hopper", (9, 0),
                     _gh100_profiles({"1": "10gb", "2": "20gb", "4": "40gb", "8": "80gb"}))
H200_141GB = Gpu("0x233510DE", "NVIDIA H200", 143771, "hopper", (9, 0),
                 _gh100_profiles({"1": "18gb", "2": "35gb", "4": "71gb", "8": "141gb"}))

# H100 NVL 94GB: PCI id 0x2321 (the driver README's compatible-GPU table: 2321 "NVIDIA H100 NVL";
# mig-parted PR #101's "H100 NVL 94GB" device-filter); name, memory,
# compute 9.0: a real node's GFD labels (gpu.product=NVIDIA-H100-NVL, gpu.memory=95830,
# gpu.compute.major=9, minor=0). Its -lgip capture (gpu-operator PR #900) shows GH100's rows with
# 1g.12gb / 1g.24gb / 2g.24gb (SM 16/16/26/32, the H100's engines) and the config names 3g.47gb,
# 4g.47gb, 7g.94gb: GH100's seven profiles at this model's memory sizes.
H100_NVL = Gpu("0x232110DE", "NVIDIA H100 NVL", 95830, "hopper", (9, 0),
               _gh100_profiles({"1": "12gb", "2": "24gb", "4": "47gb", "8": "94gb"}))

#: A GPU without MIG (Ada Lovelace, compute capability 8.9): PCI id 10de:26b9 (the PCI ID
#: Repository's entry "AD102GL [L40S]"; also 26B9 "NVIDIA L40S" in the compatible-GPU table of
#: NVIDIA/open-gpu-kernel-modules README.md), 46068 MiB as nvidia-smi reports an L40S's 48 GB
#: (NVIDIA's L40S datasheet: 48 GB GDDR6 with ECC; a real L40S node's GFD labels read
#: gpu.memory=46068, mig.capable=false). No MIG profiles: GFD labels it mig.capable=false and
#: the GPU Operator deploys no MIG manager there.
L40S = Gpu("0x26B910DE", "NVIDIA L40S", 46068, "ada-lovelace", (8, 9))

GPUS = {g.product_label: g for g in (H100_SXM5_80GB, H200_141GB, H100_NVL, L40S)}


def fits(gpu: Gpu, devices: dict[str, int]) -> str | None:
    """Why ``devices`` (profile -> count) cannot be created on one GPU, or None when it can:
    every profile known, and some placement puts all instances on disjoint memory slices."""
    wanted: list[MigProfile] = []
    for name, count in devices.items():
        p = gpu.profile(name)
        if p is None:
            return f"MIG profile {name} is not supported by {gpu.smi_name}"
        wanted += [p] * int(count)
    wanted.sort(key=lambda p: -p.size)

    def place(i: int, used: frozenset[int]) -> bool:
        if i == len(wanted):
            return True
        p = wanted[i]
        for start in p.starts:
            cells = frozenset(range(start, start + p.size))
            if not cells & used and place(i + 1, used | cells):
                return True
        return False

    return None if place(0, frozenset()) else f"no placement of {devices} fits on {gpu.smi_name}"
