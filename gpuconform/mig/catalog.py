"""MIG profiles per GPU model, the named mig-parted configs, and what the device plugin advertises.

The cluster checks take expected counts from the cluster's own mig-parted config
(``gpuconform/cluster/miglayout.py``); this catalog is their cross-check
(``cluster.mig.catalog_agrees``) and the report's reference; no count is written by hand
elsewhere: the article's own arithmetic was wrong (one H100 80GB gives at most 7x1g.10gb,
3x2g.20gb, 2x3g.40gb, 1x4g.40gb, 1x7g.80gb). Sources:

* H100 80GB HBM3 and H200 141GB: ``nvidia-smi mig -lgip`` / ``-lgipp`` captures (profile id,
  instances, memory GiB, SMs, placements), the H200 one from a real host on driver 580.159.04.
* A100 40GB / 80GB: the supported-profile tables of NVIDIA's MIG user guide.
* H100 NVL, GH200 144G HBM3e, B200: the ``nvidia-smi mig -lgip`` captures NVIDIA's engineers
  posted when adding each GPU to mig-parted / the GPU Operator (cited per model), as far as those
  captures could be read; A30: the MIG user guide's A30-24GB table. Per-GPU instance counts and
  PCI ids of every MIG model also agree with the GPU Operator's default-mig-parted-config.
* Models without MIG (L40S, L4, A10, A10G): real GPU Feature Discovery label dumps (cited per
  model); all-disabled is their only config.
* Names and PCI ids: the "compatible GPUs" table of NVIDIA/open-gpu-kernel-modules README.md
  (ids 233B, 2348, 2901 from a copy of that table at driver 610.43.03).
* A number no source read here gives is ``None``, never a guess: ``memory_gib``/``multiprocessors``
  /``profile_id`` of some rows, and the start positions of A30 and B200 profiles
  (``placements == ()``; :func:`placement_fits` then judges by instance limits and compute and
  memory slices only).
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
from typing import Iterable, Mapping, Optional, Union

RESOURCE_GPU = "nvidia.com/gpu"
RESOURCE_MIG_PREFIX = "nvidia.com/mig-"

#: Every GA100 (A100) / GH100 GPU has 8 memory slices; their placements below count in those.
MEMORY_SLICES = 8

#: GA100/GH100 placements (``nvidia-smi mig -lgipp``) by ``-lgip`` profile id: (starts, size).
#: Captured on H100 80GB and H200 and identical there; the H100 NVL and GH200 carry the same GH100.
GA100_GH100_PLACEMENTS: Mapping[int, tuple[tuple[int, ...], int]] = {
    19: ((0, 1, 2, 3, 4, 5, 6), 1),
    20: ((0, 1, 2, 3, 4, 5, 6), 1),
    15: ((0, 2, 4, 6), 2),
    14: ((0, 2, 4), 2),
    9: ((0, 4), 4),
    5: ((0,), 4),
    0: ((0,), 8),
}


class UnknownGpuModel(KeyError):
    """The GPU model (key or ``nvidia.com/gpu.product`` label) is not in the catalog."""


class UnknownMigConfig(KeyError):
    """The named mig-parted config does not exist for that GPU model."""


@dataclasses.dataclass(frozen=True)
class MigProfile:
    """One GPU-instance profile as ``nvidia-smi mig -lgip`` / ``-lgipp`` lists it."""

    name: str                  #: e.g. ``1g.10gb`` or ``1g.10gb+me``
    profile_id: Optional[int]  #: the ``ID`` column (19, 20, 15, 14, 9, 5, 0); None: no source read
    max_instances: int         #: ``Instances Total`` per GPU
    memory_gib: Optional[float]  #: ``Memory GiB`` column (driver-dependent); None: no source read
    multiprocessors: Optional[int]  #: ``SM`` column; None: no source read
    placements: tuple[int, ...]  #: allowed start memory slices (``-lgipp``); () when unpublished
    placement_size: Optional[int]  #: memory slices one instance occupies; None when unpublished

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
    memory_mib: Optional[int]  #: GFD ``nvidia.com/gpu.memory``; None: no source read
    family: str                #: GFD ``nvidia.com/gpu.family`` (k8s-device-plugin getArchFamily)
    profiles: tuple[MigProfile, ...] = ()  #: empty: the GPU has no MIG
    balanced: Mapping[str, int] = dataclasses.field(default_factory=dict)  #: ``all-balanced``, per GPU
    #: compute slices of the whole GPU: the ``<g>`` of its full-GPU profile (7, or 4 on A30)
    compute_slices: int = 7
    #: memory slices of the whole GPU (the MIG user guide's "Fraction of Memory" denominators)
    memory_slices: int = MEMORY_SLICES

    @property
    def mig_capable(self) -> bool:
        """Whether the GPU supports MIG: it has GPU-instance profiles (GFD ``mig.capable``)."""
        return bool(self.profiles)

    def profile(self, name: str) -> MigProfile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise KeyError(f"{self.key} has no MIG profile {name!r}; it has {[p.name for p in self.profiles]}")

    @property
    def configs(self) -> dict[str, MigConfig]:
        """All named mig-parted configs that apply to this model, in the ConfigMap's spirit.

        A GPU without MIG has only ``all-disabled`` (whole GPUs, ``nvidia.com/gpu``): the
        ConfigMap's ``all-disabled`` names no device filter, so it covers every GPU, while MIG
        cannot be enabled on it and the operator deploys no MIG manager where
        ``nvidia.com/mig.capable`` is not true."""
        out = {"all-disabled": MigConfig("all-disabled", False, {})}
        if not self.mig_capable:
            return out
        out["all-enabled"] = MigConfig("all-enabled", True, {})
        for p in self.profiles:
            name = "all-" + p.name.replace("+me", ".me")
            out[name] = MigConfig(name, True, {p.name: p.max_instances})
        out["all-balanced"] = MigConfig("all-balanced", True, dict(self.balanced))
        return out


Row = tuple[str, Optional[int], int, Optional[float], Optional[int]]


def _profiles(rows: Iterable[Row],
              placements: Optional[Mapping[int, tuple[tuple[int, ...], int]]] = GA100_GH100_PLACEMENTS,
              sizes: Optional[Mapping[str, int]] = None) -> tuple[MigProfile, ...]:
    """Build profiles from (name, id, instances, GiB, SMs) rows. ``placements`` maps the profile
    id to its ``-lgipp`` (starts, size): :data:`GA100_GH100_PLACEMENTS` for GA100/GH100 GPUs. For
    a chip whose start positions no source read here publishes, ``placements`` is None and
    ``sizes`` gives each profile's memory slices from the MIG user guide's fractions."""
    out = []
    for name, pid, inst, gib, sms in rows:
        if placements is not None:
            starts, size = placements[pid]
        else:
            starts, size = (), (sizes or {}).get(name)
        out.append(MigProfile(name, pid, inst, gib, sms, starts, size))
    return tuple(out)


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

# H200 SXM (0x2335 "NVIDIA H200", product NVIDIA-H200) and H200 NVL (0x233B "NVIDIA H200 NVL" in
# the driver's compatible-GPU table, product NVIDIA-H200-NVL) share one entry: the default-mig-parted-config lists both ids in one all-balanced group ("H200 141GB, H200
# NVL"), every all-<profile> there applies to both, and the MIG user guide's supported-GPUs table
# gives both as GH100, 141GB, 7 instances. The -lgip rows and memory_mib are the SXM's real capture;
# no H200 NVL -lgip capture was read, so its per-profile GiB may differ (the profiles do not).
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


# H100 NVL 94GB (0x2321; 0x233A is the H800 NVL of the same group): GH100. Rows 1g.12gb..2g.24gb
# from the -lgip capture in NVIDIA/gpu-operator PR #900 / #903 ("[H100 NVL] update all-balanced MIG
# config"); 3g.47gb's 46.38 GiB from mig-parted PR #101 (same capture); the 3g/4g/7g ids and SMs
# are GH100's (as on the H100 80GB and H200 captures); their GiB were not in a readable source.
# Product, memory: a real node's GFD labels (nvidia.com/gpu.product=NVIDIA-H100-NVL,
# gpu.memory=95830, gpu.family=hopper). Device ids: the driver's compatible-GPU table (2321
# "NVIDIA H100 NVL", 233A "NVIDIA H800 NVL"; the H800 NVL's product is GFD's rule on its name).
H100_NVL = GpuModel(
    key="H100-NVL-94GB",
    smi_name="NVIDIA H100 NVL",
    product="NVIDIA-H100-NVL",
    product_aliases=("NVIDIA-H800-NVL",),
    device_ids=("0x232110DE", "0x233A10DE"),
    memory_mib=95830,
    family="hopper",
    profiles=_profiles([
        ("1g.12gb", 19, 7, 10.75, 16),
        ("1g.12gb+me", 20, 1, 10.75, 16),
        ("1g.24gb", 15, 4, 21.62, 26),
        ("2g.24gb", 14, 3, 21.62, 32),
        ("3g.47gb", 9, 2, 46.38, 60),
        ("4g.47gb", 5, 1, None, 64),
        ("7g.94gb", 0, 1, None, 132),
    ]),
    balanced={"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1},
)

# GH200 144G HBM3e (0x2348): GH100. Rows 1g.18gb..2g.36gb from the -lgip capture in
# NVIDIA/mig-parted PR #139 / gpu-operator PR #1057 ("Add GH200 144G HBM3e (x234810DE)"); the
# 3g/4g/7g ids and SMs are GH100's; their GiB were not in a readable source. The profile names
# and counts match the default-mig-parted-config ("# GH200 144G HBM3e" sections). Name: the
# driver's compatible-GPU table (2348 "NVIDIA GH200 144G HBM3e") and real hosts' nvidia-smi, which
# also gives the memory ("NVIDIA GH200 144G HBM3e, ..., 146831 MiB, 9.0"); the product label is
# GFD's rule on that name (no GFD dump of this GPU was read). The GH200 120GB / 480GB (0x2342, the
# 96GB GPU) is left out: no -lgip capture of it was read, and the config names its profiles only
# in groups shared with the H100 NVL, H100-96GB and H20.
GH200_144GB = GpuModel(
    key="GH200-144GB",
    smi_name="NVIDIA GH200 144G HBM3e",
    product="NVIDIA-GH200-144G-HBM3e",
    product_aliases=(),
    device_ids=("0x234810DE",),
    memory_mib=146831,
    family="hopper",
    profiles=_profiles([
        ("1g.18gb", 19, 7, 17.50, 16),
        ("1g.18gb+me", 20, 1, 17.50, 16),
        ("1g.36gb", 15, 4, 35.25, 26),
        ("2g.36gb", 14, 3, 35.25, 32),
        ("3g.72gb", 9, 2, None, 60),
        ("4g.72gb", 5, 1, None, 64),
        ("7g.144gb", 0, 1, None, 132),
    ]),
    balanced={"1g.18gb": 2, "2g.36gb": 1, "3g.72gb": 1},
)

# B200 (0x2901 "NVIDIA B200" in the driver's compatible-GPU table; 0x2909, also a B200 there, is
# not in the default-mig-parted-config): GB100, compute 10.0 (GFD family "blackwell"). Rows
# 1g.23gb..2g.45gb from the -lgip capture in NVIDIA/gpu-operator PR #1242 / mig-parted PR #166
# ("add MIG configs for the B200 GPU - 2901"; later drivers print 20.50 GiB for 1g.23gb: PR
# #1351). All seven profiles, their instance counts and memory fractions (1/8, 1/8, 2/8, 2/8, 4/8,
# 4/8, full: the memory slices below) from the MIG user guide's "B200 MIG Profiles" table; the
# 3g/4g/7g ids, GiB, SMs and every start position (-lgipp) were not in a readable source. Memory:
# nvidia-smi on real B200 hosts ("NVIDIA B200, 183359 MiB", compute 10.0).
B200 = GpuModel(
    key="B200-180GB",
    smi_name="NVIDIA B200",
    product="NVIDIA-B200",
    product_aliases=(),
    device_ids=("0x290110DE",),
    memory_mib=183359,
    family="blackwell",
    profiles=_profiles([
        ("1g.23gb", 19, 7, 22.00, 18),
        ("1g.23gb+me", 20, 1, 22.00, 18),
        ("1g.45gb", 15, 4, 44.25, 30),
        ("2g.45gb", 14, 3, 44.25, 36),
        ("3g.90gb", None, 2, None, None),
        ("4g.90gb", None, 1, None, None),
        ("7g.180gb", None, 1, None, None),
    ], placements=None, sizes={"1g.23gb": 1, "1g.23gb+me": 1, "1g.45gb": 2, "2g.45gb": 2,
                               "3g.90gb": 4, "4g.90gb": 4, "7g.180gb": 8}),
    balanced={"1g.23gb": 2, "2g.45gb": 1, "3g.90gb": 1},
)

# A30 24GB (0x20B7 "NVIDIA A30" in the driver's compatible-GPU table): GA100 with 4 compute / 4
# memory slices. Profiles, instance counts and memory fractions from the MIG user guide's "A30 MIG
# Profiles" table (1g.6gb x4, 1g.6gb+me x1 at 1/4; 2g.12gb x2, 2g.12gb+me x1 at 2/4; 4g.24gb x1,
# full), which agrees with the default-mig-parted-config ("# A30-24GB"); no -lgip/-lgipp capture
# was read, so ids, GiB, SMs and start positions are None. Product and memory: a
# real node's GFD labels in a GPU Operator walkthrough (gpu.product=NVIDIA-A30, gpu.memory=24576).
A30 = GpuModel(
    key="A30-24GB",
    smi_name="NVIDIA A30",
    product="NVIDIA-A30",
    product_aliases=(),
    device_ids=("0x20B710DE",),
    memory_mib=24576,
    family="ampere",
    profiles=_profiles([
        ("1g.6gb", None, 4, None, None),
        ("1g.6gb+me", None, 1, None, None),
        ("2g.12gb", None, 2, None, None),
        ("2g.12gb+me", None, 1, None, None),
        ("4g.24gb", None, 1, None, None),
    ], placements=None, sizes={"1g.6gb": 1, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 2, "4g.24gb": 4}),
    balanced={"1g.6gb": 2, "2g.12gb": 1},
    compute_slices=4,
    memory_slices=4,
)

# -- GPUs without MIG: no profiles, only all-disabled. --------------------------------------------
# L40S: product, memory, mig.capable=false from a real node's GFD labels (NVIDIA-L40S,
# gpu.memory=46068); PCI id: the driver's compatible-GPU table (26B9 "NVIDIA L40S"); family:
# k8s-device-plugin internal/lm/resource.go getArchFamily gives
# "ada-lovelace" for compute 8.9 (v0.18.0), as the L4 node below shows.
L40S = GpuModel(
    key="L40S",
    smi_name="NVIDIA L40S",
    product="NVIDIA-L40S",
    product_aliases=(),
    device_ids=("0x26B910DE",),
    memory_mib=46068,
    family="ada-lovelace",
)

# L4: a real node's GFD labels (gpu.product=NVIDIA-L4, gpu.memory=23034, gpu.family=ada-lovelace,
# compute 8.9, mig.capable=false). PCI id: the driver's compatible-GPU table (27B8 "NVIDIA L4").
L4 = GpuModel(
    key="L4",
    smi_name="NVIDIA L4",
    product="NVIDIA-L4",
    product_aliases=(),
    device_ids=("0x27B810DE",),
    memory_mib=23034,
    family="ada-lovelace",
)

# A10 and A10G: not MIG-capable (absent from the MIG user guide's supported-GPUs table). Product,
# memory, family: real nodes' GFD labels (gpu.product=NVIDIA-A10 / NVIDIA-A10G, gpu.memory=23028,
# gpu.family=ampere). PCI ids: the driver's compatible-GPU table (2236 "NVIDIA A10", 2237
# "NVIDIA A10G").
A10 = GpuModel(
    key="A10",
    smi_name="NVIDIA A10",
    product="NVIDIA-A10",
    product_aliases=(),
    device_ids=("0x223610DE",),
    memory_mib=23028,
    family="ampere",
)

A10G = GpuModel(
    key="A10G",
    smi_name="NVIDIA A10G",
    product="NVIDIA-A10G",
    product_aliases=(),
    device_ids=("0x223710DE",),
    memory_mib=23028,
    family="ampere",
)

_ALL_MODELS = (H100_80GB, H200_141GB, A100_40GB, A100_80GB, H100_NVL, GH200_144GB, B200, A30,
               L40S, L4, A10, A10G)
#: Every model the catalog knows, by key.
KNOWN_GPU_MODELS: dict[str, GpuModel] = {m.key: m for m in _ALL_MODELS}
#: The MIG-capable models (the MIG catalog proper), by key.
GPU_MODELS: dict[str, GpuModel] = {k: m for k, m in KNOWN_GPU_MODELS.items() if m.mig_capable}
#: Models known to have no MIG, by key.
NON_MIG_GPU_MODELS: dict[str, GpuModel] = {k: m for k, m in KNOWN_GPU_MODELS.items() if not m.mig_capable}

ModelRef = Union[str, GpuModel]


def gpu_model(ref: ModelRef) -> GpuModel:
    """Look a model up by catalog key (``H100-80GB``) or GFD product label (``NVIDIA-H100-80GB-HBM3``),
    MIG-capable or not; :class:`UnknownGpuModel` for any other."""
    if isinstance(ref, GpuModel):
        return ref
    if ref in KNOWN_GPU_MODELS:
        return KNOWN_GPU_MODELS[ref]
    for m in KNOWN_GPU_MODELS.values():
        if ref == m.product or ref in m.product_aliases:
            return m
    raise UnknownGpuModel(f"GPU model {ref!r} is not in the MIG catalog; known: "
                          f"{sorted(KNOWN_GPU_MODELS)} or products "
                          f"{[m.product for m in KNOWN_GPU_MODELS.values()]}")


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
    profile's instance limit and the allowed placements on the memory slices. Where a profile's
    placements are unpublished (A30, B200 here) only a necessary condition is judged: instance
    limits and the compute and memory slices of the whole GPU."""
    m = gpu_model(model)
    wanted: list[MigProfile] = []
    for name, count in devices.items():
        p = m.profile(name)
        if count < 0 or count > p.max_instances:
            return False
        wanted.extend([p] * count)
    if any(not p.placements for p in wanted):
        if sum(p.compute_slices for p in wanted) > m.compute_slices:
            return False
        sizes = [p.placement_size for p in wanted]
        return None in sizes or sum(sizes) <= m.memory_slices
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
