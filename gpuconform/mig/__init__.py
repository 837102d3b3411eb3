"""MIG knowledge shared by the checks and the test bed: profiles per GPU model, named configs,
and the resources the device plugin advertises for them (``catalog``); NVIDIA mig-parted's
config file read as mig-parted reads it (``parted``)."""
from gpuconform.mig.catalog import (
    GPU_MODELS,
    KNOWN_GPU_MODELS,
    NON_MIG_GPU_MODELS,
    RESOURCE_GPU,
    RESOURCE_MIG_PREFIX,
    GpuModel,
    MigConfig,
    MigProfile,
    UnknownGpuModel,
    UnknownMigConfig,
    gpu_model,
    layout_resources,
    mig_config,
    mig_count_labels,
    mig_devices_per_gpu,
    mig_resource_name,
    mixed_strategy_resources,
    placement_fits,
)

__all__ = [
    "GPU_MODELS", "KNOWN_GPU_MODELS", "NON_MIG_GPU_MODELS", "RESOURCE_GPU", "RESOURCE_MIG_PREFIX", "GpuModel", "MigConfig", "MigProfile",
    "UnknownGpuModel", "UnknownMigConfig", "gpu_model", "layout_resources", "mig_config", "mig_count_labels",
    "mig_devices_per_gpu", "mig_resource_name", "mixed_strategy_resources", "placement_fits",
]
