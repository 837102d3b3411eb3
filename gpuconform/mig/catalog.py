"""MIG profiles per GPU model, the named mig-parted configs, and what the device plugin advertises.

The cluster checks take expected counts from the cluster's own mig-parted config
(``gpuconform/cluster/miglayout.py``); this catalog is their cross-check
(``cluster.mig.catalog_agrees``) and the report's reference; no count is written by hand
elsewhere: the article's own arithmetic was wrong (one H100 80GB gives at most 7x1g.10gb,
3x2g.20gb, 2x3g.40gb, 1x4g.40gb, 1x7g.80gb). Sources:

* H100 80GB HBM3 and H200 141GB: ``nvidia-smi mig -lgip`` / ``-lgipp`` captures (profile id,
  instances, memory GiB, SMs, placements), the H200 one from a real host on driver 580.159.04.
* A100 40GB / 80GB: the supported-profile tables of NVIDIA's MIG user guide.
* Named configs: the GPU Operator's static ``default-mig-parted-config`` (v25.10.0), where
  ``all-<profile>`` fills every GPU with the per-GPU maximum of one profile (``+me`` profiles
  give ``all-<g>g.<m>gb.me``) and ``all-balanced`` is a per-model mix.
* Resource names: the k8s-device-plugin mixed strategy advertises ``nvidia.com/mig-<profile>``
  with ``+me`` written ``.me``; GPUs with MIG disabled stay ``nvidia.com/gpu``.

This module is library code: it is handed values and reads no profile, file or cluster.
"""
from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Iterable, Mapping, Union

RESOURCE_GPU = "nvidia.com/gpu"
RESOURCE_MIG_PREFIX = "nvidia.com/mig-"

#: Every GA100/GH100 GPU has 8 memory slices; placements below count in those.
MEMORY_SLICES = 8


class UnknownGpuModel(KeyError):
    """The GPU model (key or ``nvidia.com/gpu.product`` label) is not in the catalog."""


class UnknownMigConfig(KeyError):
    """The named mig-parted config does not exist for that GPU model."""


@dataclasses.dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile as ``nvidia-smi mig -lgip`` / ``-lgipp`` lists it."""

    name: str                  #: e.g. ``1g.10gb`` or ``1g.10gb+me``
    profile_id: int            #: the ``ID`` column (19, 20, 15, 14, 9, 5, 0)
    max_instances: int         #: ``Instances Total`` per GPU
    memory_gib: float          #: ``Memory GiB`` column
    multiprocessors: int       #: ``SM`` column
    placements: tuple[int, ...]  #: allowed start memory slices (``-lgipp``)
    placement_size: int        #: memory slices one instance occupies

    @property
    def compute_slices(self) -> int:
        """The ``<g>`` of ``<g>g.<m>gb``."""
        return int(self.name.split("g.", 1)[0])

    @property
    def resource_name(self) -> str:
        """Extended resource the device plugin's mixed strategy advertises for this profile."""
        return mig_resource_name(self.name)


@dataclasses.dataclass(frozen=True)
class MigConfig:
    """A named mig-parted config as applied to one GPU of a model."""

    name: str
    mig_enabled: bool
    #: MIG devices created on EACH GPU, profile name -> count (empty when MIG is off or ``all-enabled``).
    devices: Mapping[str, int]


@dataclasses.dataclass(frozen=True)
class GpuModel:
    key: str                   #: catalog key, e.g. ``H100-80GB``
    smi_name: str              #: name ``nvidia-smi -L`` prints, e.g. ``NVIDIA H100 80GB HBM3``
    product: str               #: GFD ``nvidia.com/gpu.product`` label value
    product_aliases: tuple[str, ...]  #: other product label values of the same MIG geometry
    #: PCI ids (device+vendor) as mig-parted's ``device-filter`` writes them: the ids the GPU
    #: Operator's default-mig-parted-config lists for this model's group in all-balanced
    #: (gpu-operator assets/state-mig-manager/0400_configmap.yaml); how a node's product label
    #: is matched to its mig-parted config entries
    device_ids: tuple[str, ...]
    memory_mib: int            #: GFD ``nvidia.com/gpu.memory``
    family: str                #: GFD ``nvidia.com/gpu.family``
    profiles: tuple[MigProfile, ...]
    balanced: Mapping[str, int]  #: the model's ``all-balanced`` entry, per GPU

    def profile(self, name: str) -> MigProfile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise KeyError(f"{self.key} has no MIG profile {name!r}; it has {[p.name for p in self.profiles]}")

    @property
    def configs(self) -> dict[str, MigConfig]:
        """All named mig-parted configs that apply to this model, in the ConfigMap's spirit."""
        out = {
            "all-disabled": MigConfig("all-disabled", False, {}),
            "all-enabled": MigConfig("all-enabled", True, {}),
        }
        for p in self.profiles:
            name = "all-" + p.name.replace("+me", ".me")
            out[name] = MigConfig(name, True, {p.name: p.max_instances})
        out["all-balanced"] = MigConfig("all-balanced", True, dict(self.balanced))
        return out


def _profiles(rows: Iterable[tuple[str, int, int, float, int]]) -> tuple[MigProfile, ...]:
    """Build profiles from (name, id, instances, GiB, SMs); placements follow the profile id,
    identical on A100, H100 and H200 (``-lgipp``)."""
    placements = {
        19: ((0, 1, 2, 3, 4, 5, 6), 1),
        20: ((0, 1, 2, 3, 4, 5, 6), 1),
        15: ((0, 2, 4, 6), 2),
        14: ((0, 2, 4), 2),
        9: ((0, 4), 4),
        5: ((0,), 4),
        0: ((0,), 8),
    }
    return tuple(
        MigProfile(name, pid, inst, gib, sms, placements[pid][0], placements[pid][1])
        for name, pid, inst, gib, sms in rows
    )


H100_80GB = GpuModel(
    key="H100-80GB",
    smi_name="NVIDIA H100 80GB HBM3",
    product="NVIDIA-H100-80GB-HBM3",
    product_aliases=("NVIDIA-H100-SXM5-80GB", "NVIDIA-H800-80GB-HBM3", "NVIDIA-H100-PCIe"),
    device_ids=("0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"),
    memory_mib=81559,
    family="hopper",
    profiles=_profiles([
        ("1g.10gb", 19, 7, 9.75, 16),
        ("1g.10gb+me", 20, 1, 9.75, 16),
        ("1g.20gb", 15, 4, 19.62, 26),
        ("2g.20gb", 14, 3, 19.62, 32),
        ("3g.40gb", 9, 2, 39.50, 60),
        ("4g.40gb", 5, 1, 39.50, 64),
        ("7g.80gb", 0, 1, 79.25, 132),
    ]),
    balanced={"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
)

H200_141GB = GpuModel(
    key="H200-141GB",
    smi_name="NVIDIA H200",
    product="NVIDIA-H200",
    product_aliases=("NVIDIA-H200-NVL",),
    device_ids=("0x233510DE", "0x233B10DE"),
    memory_mib=143771,
    family="hopper",
    profiles=_profiles([
        ("1g.18gb", 19, 7, 16.00, 16),
        ("1g.18gb+me", 20, 1, 16.00, 16),
        ("1g.35gb", 15, 4, 32.50, 26),
        ("2g.35gb", 14, 3, 32.50, 32),
        ("3g.71gb", 9, 2, 69.75, 60),
        ("4g.71gb", 5, 1, 69.75, 64),
        ("7g.141gb", 0, 1, 140.00, 132),
    ]),
    balanced={"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1},
)

A100_40GB = GpuModel(
    key="A100-40GB",
    smi_name="NVIDIA A100-SXM4-40GB",
    product="NVIDIA-A100-SXM4-40GB",
    product_aliases=("NVIDIA-A100-PCIE-40GB", "NVIDIA-A800-SXM4-40GB"),
    device_ids=("0x20B010DE", "0x20B110DE", "0x20F110DE", "0x20F610DE"),
    memory_mib=40960,
    family="ampere",
    profiles=_profiles([
        ("1g.5gb", 19, 7, 4.75, 14),
        ("1g.5gb+me", 20, 1, 4.75, 14),
        ("1g.10gb", 15, 4, 9.62, 14),
        ("2g.10gb", 14, 3, 9.62, 28),
        ("3g.20gb", 9, 2, 19.50, 42),
        ("4g.20gb", 5, 1, 19.50, 56),
        ("7g.40gb", 0, 1, 39.25, 98),
    ]),
    balanced={"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1},
)

A100_80GB = GpuModel(
    key="A100-80GB",
    smi_name="NVIDIA A100-SXM4-80GB",
    product="NVIDIA-A100-SXM4-80GB",
    product_aliases=("NVIDIA-A100-80GB-PCIe", "NVIDIA-A800-SXM4-80GB"),
    device_ids=("0x20B210DE", "0x20B510DE", "0x20F310DE", "0x20F510DE"),
    memory_mib=81920,
    family="ampere",
    profiles=_profiles([
        ("1g.10gb", 19, 7, 9.50, 14),
        ("1g.10gb+me", 20, 1, 9.50, 14),
        ("1g.20gb", 15, 4, 19.50, 14),
        ("2g.20gb", 14, 3, 19.50, 28),
        ("3g.40gb", 9, 2, 39.25, 42),
        ("4g.40gb", 5, 1, 39.25, 56),
        ("7g.80gb", 0, 1, 79.25, 98),
    ]),
    balanced={"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1},
)

GPU_MODELS: dict[str, GpuModel] = {m.key: m for m in (H100_80GB, H200_141GB, A100_40GB, A100_80GB)}

ModelRef = Union[str, GpuModel]


def gpu_model(ref: ModelRef) -> GpuModel:
    """Look a model up by catalog key (``H100-80GB``) or GFD product label (``NVIDIA-H100-80GB-HBM3``)."""
    if isinstance(ref, GpuModel):
        return ref
    if ref in GPU_MODELS:
        return GPU_MODELS[ref]
    for m in GPU_MODELS.values():
        if ref == m.product or ref in m.product_aliases:
            return m
    raise UnknownGpuModel(f"GPU model {ref!r} is not in the MIG catalog; known: "
                          f"{sorted(GPU_MODELS)} or products {[m.product for m in GPU_MODELS.values()]}")


def mig_resource_name(profile_name: str) -> str:
    """``1g.10gb`` -> ``nvidia.com/mig-1g.10gb``; ``1g.10gb+me`` -> ``nvidia.com/mig-1g.10gb.me``."""
    return RESOURCE_MIG_PREFIX + profile_name.replace("+", ".")


def mig_config(model: ModelRef, name: str) -> MigConfig:
    m = gpu_model(model)
    configs = m.configs
    if name not in configs:
        raise UnknownMigConfig(f"mig-parted config {name!r} does not apply to {m.key}; "
                               f"known: {sorted(configs)}")
    return configs[name]


def mig_devices_per_gpu(model: ModelRef, config_name: str) -> list[str]:
    """MIG devices on one GPU in creation order (largest first, as ``nvidia-smi -L`` numbers them)."""
    m = gpu_model(model)
    cfg = mig_config(m, config_name)
    order = sorted(cfg.devices, key=lambda p: -m.profile(p).compute_slices)
    return [p for p in order for _ in range(cfg.devices[p])]


def placement_fits(model: ModelRef, devices: Mapping[str, int]) -> bool:
    """Whether one GPU can hold ``devices`` (profile -> count) at once, honouring each
    profile's instance limit and the allowed placements on the 8 memory slices."""
    m = gpu_model(model)
    wanted: list[MigProfile] = []
    for name, count in devices.items():
        p = m.profile(name)
        if count < 0 or count > p.max_instances:
            return False
        wanted.extend([p] * count)
    wanted.sort(key=lambda p: -p.placement_size)

    def place(i: int, used: frozenset[int]) -> bool:
        if i == len(wanted):
            return True
        p = wanted[i]
        for start in p.placements:
            slots = frozenset(range(start, start + p.placement_size))
            if not slots & used and place(i + 1, used | slots):
                return True
        return False

    return place(0, frozenset())


def layout_resources(per_gpu: Iterable[MigConfig]) -> dict[str, int]:
    """Allocatable extended resources the device plugin advertises, mixed strategy, for a node
    whose GPUs carry ``per_gpu`` (one :class:`MigConfig` per GPU): ``nvidia.com/gpu`` per GPU
    with MIG off, ``nvidia.com/mig-<profile>`` per MIG device. Zero counts are left out."""
    total: Counter = Counter()
    for gpu in per_gpu:
        if not gpu.mig_enabled:
            total[RESOURCE_GPU] += 1
        for profile, n in gpu.devices.items():
            total[mig_resource_name(profile)] += n
    return {res: n for res, n in sorted(total.items()) if n}


def mixed_strategy_resources(model: ModelRef, gpu_count: int, config_name: str) -> dict[str, int]:
    """:func:`layout_resources` of a node whose ``gpu_count`` GPUs all carry the catalog's
    ``config_name``.

    >>> mixed_strategy_resources("H100-80GB", 8, "all-1g.10gb")
    {'nvidia.com/mig-1g.10gb': 56}
    >>> mixed_strategy_resources("H100-80GB", 8, "all-disabled")
    {'nvidia.com/gpu': 8}
    """
    if gpu_count < 0:
        raise ValueError(f"gpu_count must be >= 0, got {gpu_count}")
    return layout_resources([mig_config(model, config_name)] * gpu_count)


def mig_count_labels(model: ModelRef, gpu_count: int, config_name: str) -> dict[str, str]:
    """The ``nvidia.com/mig-<profile>.count`` labels GPU Feature Discovery publishes (node totals)."""
    resources = mixed_strategy_resources(model, gpu_count, config_name)
    return {f"{res}.count": str(n) for res, n in resources.items() if res.startswith(RESOURCE_MIG_PREFIX)}
