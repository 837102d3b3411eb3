"""The cluster checks against installs that differ from the article's the way real sites differ:
each case is a ``helm upgrade`` of NVIDIA's chart with other values, reconciled by the real
operator and the simulated operands, then put back.

* a site's own mig-parted config (``migManager.config.create``) that redefines ``all-balanced``:
  the node is judged by the site's counts; the catalog disagreeing is its own finding;
* plugin validation with a workload (``validator.plugin.env WITH_WORKLOAD=true``): the
  nvidia-device-plugin-validator pod is then expected, and there;
* the sandbox device plugin switched on while the profile says off: the value the chart then
  writes fails the spec check.
"""
from __future__ import annotations

import pytest
import yaml
from kubernetes import client

#: a site's redefinition of all-balanced for its H100s: one 3g.40gb and four 1g.10gb per GPU
#: (fits the H100's placements: 3g at slice 0, 1g at slices 4-7)
SITE_CONFIG = {"version": "v1", "mig-configs": {
    "all-disabled": [{"devices": "all", "mig-enabled": False}],
    "all-1g.10gb": [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}],
    "all-balanced": [{"device-filter": ["0x233010DE"], "devices": "all", "mig-enabled": True,
                      "mig-devices": {"3g.40gb": 1, "1g.10gb": 4}}],
}}
SITE_VALUES = {"migManager": {"config": {"name": "site-mig-parted-config", "create": True,
                                         "data": {"config.yaml": yaml.safe_dump(SITE_CONFIG)}}}}


@pytest.fixture
def helm_upgrade(platform):
    """``helm_upgrade(values, settled)``; afterwards back to the article's values, waiting until
    every worker advertises what it did before."""
    bed = platform.platform
    before = bed.gpu_allocatable()
    yield lambda values, settled: bed.upgrade(values, settled=settled)
    bed.upgrade(None, settled=lambda: bed.gpu_allocatable() == before)
    core = client.CoreV1Api(platform.api)
    for pod in core.list_namespaced_pod("gpu-operator", label_selector="app=nvidia-device-plugin-validator").items:
        core.delete_namespaced_pod(pod.metadata.name, "gpu-operator")   # left by the plugin-validation case


def _allocatable(platform, node: str, resource: str) -> str | None:
    return client.CoreV1Api(platform.api).read_node(node).status.allocatable.get(resource)


def test_site_mig_config_is_judged_by_its_own_counts(platform, helm_upgrade, run_cluster):
    helm_upgrade(SITE_VALUES, lambda: _allocatable(platform, "gpu-worker-2", "nvidia.com/mig-1g.10gb") == "32")
    _, results = run_cluster("-k", "test_gpu_nodes")
    allocatable = results[("cluster.mig.allocatable", "gpu-worker-2")]
    assert allocatable["verdict"] == "pass", allocatable["message"]
    agrees = results[("cluster.mig.catalog_agrees", "gpu-worker-2")]
    assert agrees["verdict"] == "fail", agrees
    for text in ("site-mig-parted-config", "nvidia.com/mig-1g.10gb", "32", "16"):
        assert text in agrees["message"], agrees["message"]
    failing = {k for k, r in results.items() if r["verdict"] != "pass"}
    assert failing == {("cluster.mig.catalog_agrees", "gpu-worker-2")}, failing


def test_plugin_validation_with_workload_expects_its_pod(platform, helm_upgrade, run_cluster):
    core = client.CoreV1Api(platform.api)

    def plugin_pods_done() -> bool:
        pods = core.list_namespaced_pod("gpu-operator", label_selector="app=nvidia-device-plugin-validator").items
        return {p.spec.node_name for p in pods if p.status.phase == "Succeeded"} == {
            "gpu-worker-1", "gpu-worker-2", "gpu-worker-3"}

    helm_upgrade({"validator": {"plugin": {"env": [{"name": "WITH_WORKLOAD", "value": "true"}]}}}, plugin_pods_done)
    _, results = run_cluster("-k", "test_validations_completed")
    r = results[("cluster.operator.validation", None)]
    assert r["verdict"] == "pass", r["message"]
    assert "nvidia-device-plugin-validator" in r["evidence"]


def test_sandbox_device_plugin_on_fails_the_spec_check(platform, helm_upgrade, run_cluster):
    helm_upgrade({"sandboxDevicePlugin": {"enabled": True}},
                 lambda: platform.platform.cluster_policy()["spec"]["sandboxDevicePlugin"].get("enabled") is True)
    _, results = run_cluster("-k", "test_clusterpolicy_spec_value")
    r = results[("cluster.operator.spec", "sandboxDevicePlugin.enabled")]
    assert r["verdict"] == "fail" and "spec.sandboxDevicePlugin.enabled is True, expected False" in r["message"], r
    assert results[("cluster.operator.spec", "driver.enabled")]["verdict"] == "pass"


def test_helm_upgrade_back_to_the_article_values_clears_the_sandbox_plugin(platform, run_cluster):
    """After the previous case's revert the ClusterPolicy holds the article's values again."""
    bed = platform.platform
    bed.upgrade({"sandboxDevicePlugin": {"enabled": True}},
                settled=lambda: bed.cluster_policy()["spec"]["sandboxDevicePlugin"].get("enabled") is True)
    bed.upgrade(None, settled=lambda: "enabled" not in bed.cluster_policy()["spec"]["sandboxDevicePlugin"])
    _, results = run_cluster("-k", "test_clusterpolicy_spec_value")
    assert results[("cluster.operator.spec", "sandboxDevicePlugin.enabled")]["verdict"] == "pass"


@pytest.mark.parametrize("tolerations", [
    [{"key": "nvidia.com/gpu", "operator": "Exists"}],      # no effect: tolerates every effect
    [{"operator": "Exists"}],                               # no key: tolerates every taint
])
def test_tolerations_written_another_valid_way_pass(platform, helm_upgrade, run_cluster, tolerations):
    """The profile's toleration (nvidia.com/gpu Exists NoSchedule) is tolerated by the scheduler's
    rules, whatever words the ClusterPolicy uses; the operands are scheduled either way."""
    def operands_carry_them() -> bool:
        """The operator has rewritten every operand DaemonSet with the new tolerations."""
        dss = client.AppsV1Api(platform.api).list_namespaced_daemon_set("gpu-operator").items
        return bool(dss) and all(
            all(any({k: v for k, v in t.to_dict().items() if v is not None} == want
                    for t in ds.spec.template.spec.tolerations or []) for want in tolerations) for ds in dss)

    helm_upgrade({"daemonsets": {"tolerations": tolerations}}, operands_carry_them)
    _, results = run_cluster("-k", "test_operand_toleration or test_operand_available")
    bad = {k: (r["verdict"], r["message"]) for k, r in results.items() if r["verdict"] != "pass"}
    assert not bad, bad
    assert results[("cluster.operator.toleration", "nvidia.com/gpu Exists NoSchedule")]["verdict"] == "pass"


def test_dcgm_exporter_switched_off_names_the_spec_field(platform, helm_upgrade, run_cluster, profile_with):
    """A profile that lists nvidia-dcgm-exporter on a cluster whose ClusterPolicy turns it off: the
    failure names the switch; with the operand list left to the ClusterPolicy it is not expected."""
    helm_upgrade({"dcgmExporter": {"enabled": False}},
                 lambda: client.AppsV1Api(platform.api).list_namespaced_daemon_set(
                     "gpu-operator", field_selector="metadata.name=nvidia-dcgm-exporter").items == [])
    listed = profile_with({"cluster": {"gpu_operator": {"operands": ["nvidia-dcgm-exporter"]}}})
    _, results = run_cluster("-k", "test_operand_available", profile=listed)
    r = results[("cluster.operator.operand", "nvidia-dcgm-exporter")]
    assert r["verdict"] == "fail" and "spec.dcgmExporter.enabled is False: the operator does not deploy it" in r["message"], r
    _, results = run_cluster("-k", "test_operand_available")
    assert ("cluster.operator.operand", "nvidia-dcgm-exporter") not in results
    assert all(r["verdict"] == "pass" for r in results.values()), results
