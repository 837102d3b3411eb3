"""The platform model of the cluster checks on its own: NVIDIA's rules for sharing, MIG strategies,
operands and tolerations, each from the upstream file cited in the module (the bed proves them
against the real operator: selftest/cluster_checks/test_platform_matrix.py)."""
import pytest

from gpuconform.cluster import nodes, operator, sharing
from gpuconform.cluster.errors import ClusterError
from gpuconform.mig import MigConfig
from gpuconform.profile.cluster import Toleration

TIME_SLICING = """version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
"""


def test_time_slicing_config_replicates_and_marks_the_product_shared():
    replication = sharing.parse_plugin_config(TIME_SLICING, "cm")
    how = sharing.NodeSharing("n", "gpu-operator", "single", replication, False, "why")
    assert how.mode == "time-slicing" and how.replicas() == 4
    assert how.advertised({"nvidia.com/gpu": 8}) == {"nvidia.com/gpu": 32}
    assert how.shared_product("NVIDIA-H100-80GB-HBM3") == "NVIDIA-H100-80GB-HBM3-SHARED"


def test_rename_by_default_advertises_a_shared_resource_without_the_suffix():
    text = TIME_SLICING.replace("  timeSlicing:\n", "  timeSlicing:\n    renameByDefault: true\n")
    how = sharing.NodeSharing("n", "gpu-operator", "none", sharing.parse_plugin_config(text, "cm"), False, "")
    assert how.advertised({"nvidia.com/gpu": 2}) == {"nvidia.com/gpu.shared": 8}
    assert how.shared_product("NVIDIA-L40S") == "NVIDIA-L40S"


def test_mps_section_wins_over_time_slicing():
    text = TIME_SLICING + "  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n"
    replication = sharing.parse_plugin_config(text, "cm")
    assert replication["nvidia.com/gpu"].how == "mps" and replication["nvidia.com/gpu"].replicas == 2


@pytest.mark.parametrize("text", ["version: v2\n", "sharing: [", "version: v1\nsharing:\n  timeSlicing:\n"
                                  "    resources: [{name: nvidia.com/gpu}]\n"])
def test_a_config_the_plugin_refuses_cannot_be_told(text):
    with pytest.raises(ClusterError):
        sharing.parse_plugin_config(text, "cm")


def _gpu(devices: dict | None) -> MigConfig:
    return MigConfig("c", devices is not None, devices or {})


def test_single_strategy_counts_mig_devices_as_gpus():
    assert sharing.single_strategy([_gpu({"1g.10gb": 7})] * 8, "P") == ({"nvidia.com/gpu": 56}, "P-MIG-1g.10gb", 56)
    assert sharing.single_strategy([_gpu(None)] * 8, "P") == ({"nvidia.com/gpu": 8}, "P", 8)


@pytest.mark.parametrize("per_gpu", [
    [_gpu({"1g.10gb": 7}), _gpu(None)],                      # MIG on some GPUs, off on others
    [_gpu({"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})],      # two profiles (all-balanced)
    [_gpu({})],                                              # MIG enabled, no devices
])
def test_single_strategy_refuses_what_it_cannot_serve(per_gpu):
    assert sharing.single_strategy(per_gpu, "P") == ({}, "P-MIG-INVALID", 0)


def test_mig_manager_runs_only_where_the_operator_finds_a_mig_capable_gpu():
    assert nodes.mig_capable({"nvidia.com/mig.capable": "true"})
    assert not nodes.mig_capable({"nvidia.com/mig.capable": "false", "nvidia.com/gpu.product": "NVIDIA-H100"})
    assert nodes.mig_capable({"nvidia.com/gpu.product": "NVIDIA-A30"})   # no mig.capable label yet
    assert not nodes.mig_capable({"nvidia.com/gpu.product": "NVIDIA-L40S"})
    assert not nodes.mig_capable({"nvidia.com/mig.capable": "true", "nvidia.com/vgpu.host-driver-version": "1"})


def test_operands_follow_the_cluster_policy():
    assert operator.enabled_operands({"driver": {"enabled": False}, "dcgm": {"enabled": False}}) == [
        "nvidia-container-toolkit-daemonset", "nvidia-device-plugin-daemonset", "gpu-feature-discovery",
        "nvidia-dcgm-exporter", "nvidia-mig-manager", "nvidia-operator-validator"]
    spec = {"migManager": {"enabled": False}, "dcgmExporter": {"enabled": False}}
    assert "nvidia-mig-manager" not in operator.enabled_operands(spec)
    assert operator.operand_switched_off(spec, "nvidia-dcgm-exporter") == (
        "ClusterPolicy spec.dcgmExporter.enabled is False: the operator does not deploy it")
    hosts = [{"metadata": {"name": "h100", "labels": {"nvidia.com/mig.capable": "true"}}},
             {"metadata": {"name": "l40s", "labels": {"nvidia.com/mig.capable": "false"}}}]
    assert [nodes.name(n) for n in operator.operand_nodes("nvidia-mig-manager", hosts)] == ["h100"]
    assert len(operator.operand_nodes("gpu-feature-discovery", hosts)) == 2


def test_a_node_with_operands_disabled_is_named_with_the_operators_reason():
    ds = {"spec": {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.deploy.device-plugin": "true"}}}}}
    node = {"metadata": {"name": "w", "labels": {"nvidia.com/gpu.deploy.operands": "false"}}}
    assert operator.operand_unscheduled(ds, [node]) == [
        'w: label nvidia.com/gpu.deploy.operands=false: the GPU Operator disables every operand there '
        '("Operands are disabled for node")']


@pytest.mark.parametrize("have", [
    [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    [{"key": "nvidia.com/gpu", "operator": "Exists"}],        # no effect: every effect
    [{"operator": "Exists"}],                                  # no key: every taint
])
def test_tolerations_by_the_schedulers_rules(have):
    want = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
    assert all(nodes.tolerates(have, t) for t in want.taints())


def test_a_toleration_of_another_effect_or_key_does_not_tolerate():
    want = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")
    for have in ([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}],
                 [{"key": "other", "operator": "Exists"}], []):
        assert not all(nodes.tolerates(have, t) for t in want.taints()), have
    any_effect = Toleration(key="nvidia.com/gpu", operator="Exists")
    assert not all(nodes.tolerates([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}], t)
                   for t in any_effect.taints())
