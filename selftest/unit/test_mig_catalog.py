"""The MIG catalog: per-model profile limits, named configs and mixed-strategy resources."""
import pytest

from gpuconform.mig import (
    GPU_MODELS,
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
