"""The simulated nodes' pure parts, against NVIDIA's real data: mig-parted's reading of the GPU
Operator's own default-mig-parted-config, the device plugin's resources, the devices a pod gets."""
from __future__ import annotations

import json
import re

import pytest
import yaml
from kubernetes import client

from testbed.cluster import migparted
from testbed.cluster.devices import echo_text, gpu_requests, node_devices, smi_lines
from testbed.cluster.hardware import H100_SXM5_80GB, H200_141GB, fits
from testbed.cluster.nodeagent import ANN_GPUS, gfd_labels, plugin_resources
from testbed.cluster.nodes import GpuWorker, simulated_gpus
from testbed.gpuoperator.binaries import module_dir

MIG_LINE = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[0-9a-f-]+)\)$")


@pytest.fixture(scope="module")
def default_config() -> dict:
    """NVIDIA's default-mig-parted-config as the operator deploys it (assets/state-mig-manager)."""
    cm = yaml.safe_load((module_dir() / "assets" / "state-mig-manager" / "0400_configmap.yaml").read_text())
    return migparted.load(cm["data"]["config.yaml"])


def layout_of(configs, name, gpu=H100_SXM5_80GB, count=8):
    return migparted.apply(configs, name, gpu, [None] * count)


@pytest.mark.parametrize("name, want", [
    ("all-disabled", {"nvidia.com/gpu": 8}),
    ("all-1g.10gb", {"nvidia.com/mig-1g.10gb": 56}),
    ("all-balanced", {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8}),
    ("all-3g.40gb", {"nvidia.com/mig-3g.40gb": 16}),
    ("all-7g.80gb", {"nvidia.com/mig-7g.80gb": 8}),
])
def test_h100_layouts_from_nvidia_config(default_config, name, want):
    """The device plugin's mixed-strategy resources for NVIDIA's own configs on an H100x8
    (the all-balanced entry is picked by its device-filter 0x233010DE)."""
    hw = {"layout": layout_of(default_config, name)}
    assert plugin_resources(hw, "mixed") == want


def test_h200_balanced_uses_its_own_device_filter(default_config):
    layout = layout_of(default_config, "all-balanced", H200_141GB, 1)
    assert layout == [{"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}]


def test_unknown_config_and_profile_the_gpu_cannot_hold_fail(default_config):
    with pytest.raises(migparted.MigPartedError, match="selected mig-config not present: all-typo"):
        layout_of(default_config, "all-typo")
    with pytest.raises(migparted.MigPartedError, match="not supported by NVIDIA H100 80GB HBM3"):
        layout_of(default_config, "all-1g.5gb")   # an A100-40GB profile


def test_later_spec_overrides_and_index_lists():
    configs = migparted.load(yaml.safe_dump({"version": "v1", "mig-configs": {"site": [
        {"devices": "all", "mig-enabled": False},
        {"devices": [0, 1], "mig-enabled": True, "mig-devices": {"3g.40gb": 2}},
        {"device-filter": "0x999910DE", "devices": "all", "mig-enabled": True, "mig-devices": {"7g.80gb": 1}},
    ]}}))
    assert layout_of(configs, "site", count=3) == [{"3g.40gb": 2}, {"3g.40gb": 2}, None]


def test_placement_follows_lgipp():
    assert fits(H100_SXM5_80GB, {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}) is None
    assert fits(H100_SXM5_80GB, {"4g.40gb": 1, "3g.40gb": 1}) is None
    assert "no placement" in fits(H100_SXM5_80GB, {"4g.40gb": 2})
    assert "no placement" in fits(H100_SXM5_80GB, {"1g.10gb": 8})


def test_gfd_labels_under_mixed_strategy(default_config):
    hw = simulated_gpus(GpuWorker("w", "all-balanced"), layout_of(default_config, "all-balanced"))
    labels = gfd_labels(hw, "mixed")
    assert labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3" and labels["nvidia.com/gpu.count"] == "8"
    assert labels["nvidia.com/gpu.replicas"] == "0" and labels["nvidia.com/mig.strategy"] == "mixed"
    assert labels["nvidia.com/mig-2g.20gb.count"] == "8"
    assert labels["nvidia.com/mig-1g.10gb.multiprocessors"] == "16"   # formats.md 5.1
    assert labels["nvidia.com/mig-3g.40gb.product"] == "NVIDIA-H100-80GB-HBM3-MIG-3g.40gb"


def _node(name: str, layout: list, allocatable: dict) -> client.V1Node:
    hw = simulated_gpus(GpuWorker(name, "x"), layout)
    return client.V1Node(metadata=client.V1ObjectMeta(name=name, annotations={ANN_GPUS: json.dumps(hw)}),
                         status=client.V1NodeStatus(allocatable=allocatable))


def _pod(limits: dict, command=None, args=None) -> client.V1Pod:
    return client.V1Pod(spec=client.V1PodSpec(containers=[client.V1Container(
        name="c", command=command, args=args, resources=client.V1ResourceRequirements(limits=limits))]))


def test_balanced_node_has_its_devices_with_unique_uuids(default_config):
    layout = layout_of(default_config, "all-balanced")
    devices = node_devices(_node("w", layout, {k: str(v) for k, v in plugin_resources({"layout": layout}, "mixed").items()}))
    counts: dict[str, int] = {}
    for d in devices:
        counts[d.resource] = counts.get(d.resource, 0) + 1
    assert counts == {"nvidia.com/mig-3g.40gb": 8, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-1g.10gb": 16}
    assert len({d.uuid for d in devices}) == len(devices)


def test_devices_are_limited_to_what_allocatable_advertises(default_config):
    layout = layout_of(default_config, "all-1g.10gb")
    assert len(node_devices(_node("w", layout, {"nvidia.com/mig-1g.10gb": "49"}))) == 49


def test_uuids_are_stable_per_node():
    alloc = {"nvidia.com/gpu": "8"}
    a = [d.uuid for d in node_devices(_node("w", [None] * 8, alloc))]
    b = [d.uuid for d in node_devices(_node("w", [None] * 8, alloc))]
    c = [d.uuid for d in node_devices(_node("other", [None] * 8, alloc))]
    assert a == b and not set(a) & set(c)


def test_two_whole_gpus_are_renumbered_from_zero():
    devices = node_devices(_node("w", [None] * 8, {"nvidia.com/gpu": "8"}))[3:5]
    assert [line.split(":")[0] for line in smi_lines(devices)] == ["GPU 0", "GPU 1"]


def test_mig_devices_listed_largest_first_as_nvidia_smi_does(default_config):
    layout = layout_of(default_config, "all-balanced", count=1)
    devices = node_devices(_node("w", layout, {k: str(v) for k, v in plugin_resources({"layout": layout}, "mixed").items()}))
    lines = smi_lines(devices)
    assert lines[0].startswith("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-")
    assert [MIG_LINE.match(x).group(1) for x in lines[1:]] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


def test_gpu_requests_keep_only_gpu_resources():
    assert gpu_requests(_pod({"nvidia.com/mig-1g.10gb": "2", "cpu": "1"})) == {"nvidia.com/mig-1g.10gb": 2}


def test_echo_text_of_validator_style_commands():
    assert echo_text(_pod({}, ["sh", "-c"], ["echo cuda workload validation is successful"])) == \
        "cuda workload validation is successful"


def test_echo_text_stops_at_the_shell_separator():
    pod = _pod({}, ["sh", "-c"], ["echo all validations are successful; while true; do sleep 86400; done"])
    assert echo_text(pod) == "all validations are successful"


def test_init_container_ask_counts_like_the_scheduler_counts_it():
    pod = _pod({"nvidia.com/gpu": "1"})
    pod.spec.init_containers = [client.V1Container(name="i", resources=client.V1ResourceRequirements(
        limits={"nvidia.com/mig-1g.10gb": "1", "nvidia.com/gpu": "1"}))]
    assert gpu_requests(pod) == {"nvidia.com/gpu": 1, "nvidia.com/mig-1g.10gb": 1}


def test_helm_upgrade_patch_drops_what_the_new_rendering_left_out():
    """The chart writes sandboxDevicePlugin.enabled only when true: going back to false must
    remove it from the ClusterPolicy, as helm upgrade's patch does."""
    from testbed.gpuoperator.operator import merge_patch
    old = {"spec": {"sandboxDevicePlugin": {"enabled": True, "image": "x"}, "mig": {"strategy": "mixed"}}}
    new = {"spec": {"sandboxDevicePlugin": {"image": "x"}, "mig": {"strategy": "mixed"}, "cdi": {"enabled": False}}}
    assert merge_patch(old, new) == {"spec": {"sandboxDevicePlugin": {"enabled": None}, "cdi": {"enabled": False}}}
