"""The MIG catalog: per-model profile limits, named configs and mixed-strategy resources."""
import pytest

from gpuconform.mig import (
    GPU_MODELS,
    KNOWN_GPU_MODELS,
    NON_MIG_GPU_MODELS,
    UnknownGpuModel,
    UnknownMigConfig,
    gpu_model,
    mig_config,
    mig_count_labels,
    mig_devices_per_gpu,
    mig_resource_name,
    mixed_strategy_resources,
    placement_fits,
)


@pytest.mark.parametrize("model, gpus, config, expected", [
    ("H100-80GB", 8, "all-1g.10gb", {"nvidia.com/mig-1g.10gb": 56}),
    ("H100-80GB", 8, "all-disabled", {"nvidia.com/gpu": 8}),
    ("H100-80GB", 8, "all-balanced",
     {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}),
    ("H100-80GB", 8, "all-1g.10gb.me", {"nvidia.com/mig-1g.10gb.me": 8}),
    ("H100-80GB", 8, "all-1g.20gb", {"nvidia.com/mig-1g.20gb": 32}),
    ("H100-80GB", 8, "all-2g.20gb", {"nvidia.com/mig-2g.20gb": 24}),
    ("H100-80GB", 8, "all-3g.40gb", {"nvidia.com/mig-3g.40gb": 16}),
    ("H100-80GB", 8, "all-4g.40gb", {"nvidia.com/mig-4g.40gb": 8}),
    ("H100-80GB", 8, "all-7g.80gb", {"nvidia.com/mig-7g.80gb": 8}),
    ("H100-80GB", 8, "all-enabled", {}),
    ("H200-141GB", 1, "all-1g.18gb", {"nvidia.com/mig-1g.18gb": 7}),
    ("H200-141GB", 4, "all-balanced",
     {"nvidia.com/mig-1g.18gb": 8, "nvidia.com/mig-2g.35gb": 4, "nvidia.com/mig-3g.71gb": 4}),
    ("A100-40GB", 8, "all-1g.10gb", {"nvidia.com/mig-1g.10gb": 32}),
    ("A100-40GB", 2, "all-1g.5gb", {"nvidia.com/mig-1g.5gb": 14}),
    ("A100-80GB", 8, "all-1g.10gb", {"nvidia.com/mig-1g.10gb": 56}),
    ("H100-80GB", 0, "all-disabled", {}),
])
def test_mixed_strategy_resources(model, gpus, config, expected):
    assert mixed_strategy_resources(model, gpus, config) == expected


@pytest.mark.parametrize("model, limits", [
    ("H100-80GB", {"1g.10gb": 7, "1g.10gb+me": 1, "1g.20gb": 4, "2g.20gb": 3, "3g.40gb": 2,
                   "4g.40gb": 1, "7g.80gb": 1}),
    ("H200-141GB", {"1g.18gb": 7, "1g.18gb+me": 1, "1g.35gb": 4, "2g.35gb": 3, "3g.71gb": 2,
                    "4g.71gb": 1, "7g.141gb": 1}),
    ("A100-40GB", {"1g.5gb": 7, "1g.5gb+me": 1, "1g.10gb": 4, "2g.10gb": 3, "3g.20gb": 2,
                   "4g.20gb": 1, "7g.40gb": 1}),
])
def test_max_instances_per_gpu(model, limits):
    assert {p.name: p.max_instances for p in gpu_model(model).profiles} == limits


def test_h200_matches_the_real_host_listing():
    """Ids, memory and SMs as `nvidia-smi mig -lgip` printed them on a real H200 (580.159.04)."""
    rows = {p.name: (p.profile_id, p.memory_gib, p.multiprocessors) for p in gpu_model("H200-141GB").profiles}
    assert rows == {
        "1g.18gb": (19, 16.00, 16), "1g.18gb+me": (20, 16.00, 16), "1g.35gb": (15, 32.50, 26),
        "2g.35gb": (14, 32.50, 32), "3g.71gb": (9, 69.75, 60), "4g.71gb": (5, 69.75, 64),
        "7g.141gb": (0, 140.00, 132),
    }


@pytest.mark.parametrize("model", sorted(GPU_MODELS))
def test_every_named_config_fits_one_gpu(model):
    for name, cfg in gpu_model(model).configs.items():
        assert placement_fits(model, cfg.devices), f"{model} {name} {dict(cfg.devices)}"


@pytest.mark.parametrize("devices", [
    {"1g.10gb": 8},
    {"3g.40gb": 3},
    {"4g.40gb": 1, "3g.40gb": 2},
    {"7g.80gb": 1, "1g.10gb": 1},
    {"2g.20gb": 3, "3g.40gb": 1},
])
def test_impossible_layouts_do_not_fit(devices):
    assert not placement_fits("H100-80GB", devices)


def test_4g_and_3g_share_a_gpu():
    assert placement_fits("H100-80GB", {"4g.40gb": 1, "3g.40gb": 1})


def test_me_profiles_map_to_dot_me_resources():
    assert mig_resource_name("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"
    assert "all-1g.18gb.me" in gpu_model("H200-141GB").configs


@pytest.mark.parametrize("label", ["NVIDIA-H100-80GB-HBM3", "H100-80GB"])
def test_model_lookup_by_product_label_or_key(label):
    assert gpu_model(label).key == "H100-80GB"


def test_unknown_model_names_the_known_ones():
    with pytest.raises(UnknownGpuModel, match="H100-80GB"):
        gpu_model("NVIDIA-GeForce-RTX-4090")


def test_unknown_config_for_model():
    with pytest.raises(UnknownMigConfig, match="all-1g.10gb"):
        mig_config("H100-80GB", "all-1g.18gb")


def test_devices_in_nvidia_smi_order():
    assert mig_devices_per_gpu("H100-80GB", "all-balanced") == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


def test_gfd_count_labels():
    assert mig_count_labels("H100-80GB", 8, "all-balanced") == {
        "nvidia.com/mig-1g.10gb.count": "16", "nvidia.com/mig-2g.20gb.count": "8",
        "nvidia.com/mig-3g.40gb.count": "8"}
    assert mig_count_labels("H100-80GB", 8, "all-disabled") == {}


# -- models beyond the article's H100 (issue #21: GPU model) ---------------------------------------
@pytest.mark.parametrize("model, limits", [
    ("H100-NVL-94GB", {"1g.12gb": 7, "1g.12gb+me": 1, "1g.24gb": 4, "2g.24gb": 3, "3g.47gb": 2,
                       "4g.47gb": 1, "7g.94gb": 1}),
    ("GH200-144GB", {"1g.18gb": 7, "1g.18gb+me": 1, "1g.36gb": 4, "2g.36gb": 3, "3g.72gb": 2,
                     "4g.72gb": 1, "7g.144gb": 1}),
    ("B200-180GB", {"1g.23gb": 7, "1g.23gb+me": 1, "1g.45gb": 4, "2g.45gb": 3, "3g.90gb": 2,
                    "4g.90gb": 1, "7g.180gb": 1}),
    ("A30-24GB", {"1g.6gb": 4, "1g.6gb+me": 1, "2g.12gb": 2, "2g.12gb+me": 1, "4g.24gb": 1}),
])
def test_new_models_instance_limits(model, limits):
    assert {p.name: p.max_instances for p in gpu_model(model).profiles} == limits


@pytest.mark.parametrize("model, gpus, config, expected", [
    ("H100-NVL-94GB", 8, "all-1g.12gb", {"nvidia.com/mig-1g.12gb": 56}),
    ("H100-NVL-94GB", 2, "all-balanced",
     {"nvidia.com/mig-1g.12gb": 4, "nvidia.com/mig-2g.24gb": 2, "nvidia.com/mig-3g.47gb": 2}),
    ("GH200-144GB", 1, "all-balanced",
     {"nvidia.com/mig-1g.18gb": 2, "nvidia.com/mig-2g.36gb": 1, "nvidia.com/mig-3g.72gb": 1}),
    ("GH200-144GB", 4, "all-1g.36gb", {"nvidia.com/mig-1g.36gb": 16}),
    ("B200-180GB", 8, "all-balanced",
     {"nvidia.com/mig-1g.23gb": 16, "nvidia.com/mig-2g.45gb": 8, "nvidia.com/mig-3g.90gb": 8}),
    ("B200-180GB", 8, "all-1g.23gb.me", {"nvidia.com/mig-1g.23gb.me": 8}),
    ("A30-24GB", 4, "all-1g.6gb", {"nvidia.com/mig-1g.6gb": 16}),
    ("A30-24GB", 2, "all-balanced", {"nvidia.com/mig-1g.6gb": 4, "nvidia.com/mig-2g.12gb": 2}),
    ("A30-24GB", 2, "all-2g.12gb.me", {"nvidia.com/mig-2g.12gb.me": 2}),
    ("L40S", 4, "all-disabled", {"nvidia.com/gpu": 4}),
    ("A10", 1, "all-disabled", {"nvidia.com/gpu": 1}),
])
def test_new_models_resources(model, gpus, config, expected):
    assert mixed_strategy_resources(model, gpus, config) == expected


@pytest.mark.parametrize("model", ["L40S", "L4", "A10", "A10G"])
def test_gpus_without_mig_have_only_all_disabled(model):
    """A GPU without MIG: no profiles, mig_capable false, whole GPUs under every layout it can
    have (the ConfigMap's all-disabled names no device filter); all-enabled / all-balanced do
    not apply to it."""
    m = gpu_model(model)
    assert (m.mig_capable, m.profiles, list(m.configs)) == (False, (), ["all-disabled"])
    with pytest.raises(UnknownMigConfig):
        mig_config(model, "all-balanced")
    assert model in NON_MIG_GPU_MODELS and model not in GPU_MODELS


@pytest.mark.parametrize("product, key", [
    ("NVIDIA-H100-NVL", "H100-NVL-94GB"),
    ("NVIDIA-H800-NVL", "H100-NVL-94GB"),
    ("NVIDIA-H200", "H200-141GB"),
    ("NVIDIA-H200-NVL", "H200-141GB"),
    ("NVIDIA-GH200-144G-HBM3e", "GH200-144GB"),
    ("NVIDIA-B200", "B200-180GB"),
    ("NVIDIA-A30", "A30-24GB"),
    ("NVIDIA-L40S", "L40S"),
    ("NVIDIA-L4", "L4"),
    ("NVIDIA-A10", "A10"),
    ("NVIDIA-A10G", "A10G"),
])
def test_product_lookup_of_new_models(product, key):
    assert gpu_model(product).key == key


@pytest.mark.parametrize("product", ["NVIDIA-H100-NVL-SHARED", "NVIDIA-L40", "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"])
def test_other_products_stay_unknown(product):
    """Time-slicing's -SHARED and MIG single's -MIG-<profile> labels are not models; call sites
    map them (another change), the catalog does not guess."""
    with pytest.raises(UnknownGpuModel):
        gpu_model(product)


def test_catalog_pci_ids_are_unique_per_model():
    seen: dict[str, str] = {}
    for m in KNOWN_GPU_MODELS.values():
        for i in m.device_ids:
            assert seen.setdefault(i.upper(), m.key) == m.key, (i, seen[i.upper()], m.key)


def test_gh100_rows_as_captured():
    """H100 NVL rows as NVIDIA's -lgip capture (gpu-operator PR #900) printed them."""
    rows = {p.name: (p.profile_id, p.memory_gib, p.multiprocessors) for p in gpu_model("H100-NVL-94GB").profiles}
    assert rows["1g.12gb"] == (19, 10.75, 16) and rows["2g.24gb"] == (14, 21.62, 32)
    assert rows["3g.47gb"] == (9, 46.38, 60)


def test_a30_has_four_compute_slices():
    """A30's 4g.24gb is the whole GPU (4 compute, 4 memory slices): no two 2g plus a 1g, no 4g
    beside anything."""
    assert placement_fits("A30-24GB", {"2g.12gb": 2})
    assert placement_fits("A30-24GB", {"2g.12gb": 1, "1g.6gb": 2})
    assert not placement_fits("A30-24GB", {"2g.12gb": 2, "1g.6gb": 1})
    assert not placement_fits("A30-24GB", {"4g.24gb": 1, "1g.6gb": 1})


def test_b200_without_published_placements_judged_by_slices():
    """No -lgipp of B200 was read: compute slices (of 7) and memory slices (of 8, the MIG user
    guide's fractions) are judged, start positions are not."""
    assert placement_fits("B200-180GB", {"4g.90gb": 1, "3g.90gb": 1})
    assert placement_fits("B200-180GB", {"1g.45gb": 4})
    assert not placement_fits("B200-180GB", {"4g.90gb": 1, "3g.90gb": 1, "1g.23gb": 1})  # 8 compute slices
    assert not placement_fits("B200-180GB", {"1g.45gb": 3, "3g.90gb": 1})  # 10 memory slices
    assert not placement_fits("B200-180GB", {"1g.23gb": 8})
