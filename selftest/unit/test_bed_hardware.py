"""The bed's simulated GPUs beyond the article's H100/H200 (testbed/cluster/hardware.py): an H100
NVL that NVIDIA's own default-mig-parted-config partitions, and an L40S without MIG that the
same config leaves whole. Judged by the bed's mig-parted and GFD simulation, not the suite."""
from __future__ import annotations

import pytest

from testbed.cluster import migparted
from testbed.cluster.hardware import GPUS, H100_NVL, L40S
from testbed.cluster.nodeagent import gfd_labels

HW = {"count": 2, "driver": "580.159.04", "cuda": "13.0", "machine": "bed"}


@pytest.fixture(scope="module")
def nvidia_configs(upstream_asset) -> dict:
    return migparted.load(upstream_asset("state-mig-manager/0400_configmap.yaml")["data"]["config.yaml"])


def test_gpus_keyed_by_gfd_product():
    assert {"NVIDIA-H100-NVL", "NVIDIA-L40S"} <= set(GPUS)
    assert GPUS["NVIDIA-L40S"] is L40S and GPUS["NVIDIA-H100-NVL"] is H100_NVL


@pytest.mark.parametrize("config, layout", [
    ("all-balanced", {"1g.12gb": 2, "2g.24gb": 1, "3g.47gb": 1}),
    ("all-1g.12gb", {"1g.12gb": 7}),
    ("all-7g.94gb", {"7g.94gb": 1}),
])
def test_h100_nvl_takes_nvidias_configs(nvidia_configs, config, layout):
    assert migparted.apply(nvidia_configs, config, H100_NVL, [None, None]) == [layout, layout]


@pytest.mark.parametrize("config", ["all-disabled", "all-enabled", "all-balanced", "all-1g.10gb"])
def test_l40s_stays_whole_under_every_config(nvidia_configs, config):
    """mig-parted skips a non-MIG GPU for ``devices: all`` (and all-balanced's filters miss it)."""
    assert migparted.apply(nvidia_configs, config, L40S, [None, None]) == [None, None]


def test_l40s_gfd_labels():
    labels = gfd_labels({**HW, "product": "NVIDIA-L40S", "layout": [None, None]}, "single")
    assert {k: labels[k] for k in ("nvidia.com/gpu.product", "nvidia.com/gpu.family", "nvidia.com/gpu.memory",
                                    "nvidia.com/gpu.compute.major", "nvidia.com/gpu.compute.minor",
                                    "nvidia.com/mig.capable")} == {
        "nvidia.com/gpu.product": "NVIDIA-L40S", "nvidia.com/gpu.family": "ada-lovelace",
        "nvidia.com/gpu.memory": "46068", "nvidia.com/gpu.compute.major": "8",
        "nvidia.com/gpu.compute.minor": "9", "nvidia.com/mig.capable": "false"}
