"""Expected MIG counts come from the cluster's own mig-parted config (the ConfigMap the
ClusterPolicy names), evaluated for the node's GPU and advertised under its MIG strategy; the MIG
catalog is a cross-check. Proven on NVIDIA's real default-mig-parted-config and on
site-specific configs, through the real ClusterFacts reading ConfigMaps from a stand-in API (no
cluster)."""
from __future__ import annotations

import pytest
import yaml

from gpuconform.cluster import gpunode
from gpuconform.cluster.errors import ClusterError
from gpuconform.cluster.facts import ClusterFacts
from gpuconform.mig import GPU_MODELS, layout_resources, mixed_strategy_resources
from gpuconform.mig.parted import MigPartedError, gpu_layouts, parse

NS = "gpu-operator"
MIG_CM = "state-mig-manager/0400_configmap.yaml"


class StandInApi:
    """get_json over a dict of API paths: what ClusterFacts asks of a Cluster."""

    def __init__(self, objects: dict[str, dict]):
        self.objects = objects

    def get_json(self, path, query=None, *, what=None, missing_ok=False):
        if path not in self.objects and not missing_ok:
            raise AssertionError(f"unexpected read {path}")
        return self.objects.get(path)


def _node(config: str | None, product="NVIDIA-H100-80GB-HBM3", count="8") -> dict:
    labels = {"nvidia.com/gpu.product": product, "nvidia.com/gpu.count": count}
    if config:
        labels["nvidia.com/mig.config"] = config
    return {"metadata": {"name": "gpu-worker-1", "labels": labels}}


def _facts(configmaps: dict[str, str], policy_spec: dict) -> ClusterFacts:
    objects = {"/apis/nvidia.com/v1/clusterpolicies": {"items": [
        {"metadata": {"name": "cluster-policy"}, "spec": policy_spec}]}}
    for name, text in configmaps.items():
        objects[f"/api/v1/namespaces/{NS}/configmaps/{name}"] = {"data": {"config.yaml": text}}
    return ClusterFacts(StandInApi(objects), gpu_selector="nvidia.com/gpu.present=true",
                        operator_namespace=NS, connect_timeout=1)


def _expect(facts: ClusterFacts, node: dict, config: str | None = None) -> gpunode.Expected:
    """What the node should show, the profile's product and count read from its own labels."""
    labels = node["metadata"]["labels"]
    declared = gpunode.Declared("gpu-operator", "cluster-policy", labels["nvidia.com/gpu.product"],
                                int(labels["nvidia.com/gpu.count"]), "auto", None)
    return gpunode.expected(facts, declared, node, config)


@pytest.fixture(scope="module")
def default_config_text(upstream_asset) -> str:
    cm = upstream_asset(MIG_CM)
    assert cm["metadata"]["name"] == "default-mig-parted-config"
    return cm["data"]["config.yaml"]


@pytest.fixture(scope="module")
def article_spec(render_cluster_policy) -> dict:
    return render_cluster_policy()["spec"]


# -- NVIDIA's own config -----------------------------------------------------------------------
def test_catalog_matches_nvidia_default_config(default_config_text):
    """Every catalog config of every model, for each of the model's PCI ids, is what NVIDIA's
    default-mig-parted-config gives; every catalog PCI id is one that config names."""
    configs = parse(default_config_text)
    named = {f.upper() for entries in configs.values() for e in entries for f in e.device_filter}
    compared = 0
    for model in GPU_MODELS.values():
        assert {i.upper() for i in model.device_ids} <= named, model.key
        for name in model.configs:
            for gpu_id in model.device_ids:
                got = layout_resources(gpu_layouts(configs, name, gpu_id, 8))
                assert got == mixed_strategy_resources(model, 8, name), (model.key, name, gpu_id)
                compared += 1
    assert compared > 100


def test_article_nodes_expected_from_the_default_config(default_config_text, article_spec):
    """No spec.migManager.config.name (the chart renders null): default-mig-parted-config."""
    facts = _facts({"default-mig-parted-config": default_config_text}, article_spec)
    balanced = _expect(facts, _node("all-balanced"))
    assert balanced.allocatable == {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8,
                                    "nvidia.com/mig-3g.40gb": 8} == balanced.mig.catalog
    assert balanced.mig.catalog_disagreement() is None
    assert str(balanced.mig) == ("mig-parted config all-balanced (ConfigMap gpu-operator/default-mig-parted-config) "
                                 "for H100-80GB (0x233010DE) x 8")
    assert _expect(facts, _node("all-1g.10gb")).allocatable == {"nvidia.com/mig-1g.10gb": 56}
    assert _expect(facts, _node(None)).allocatable == {"nvidia.com/gpu": 8}  # migManager.config.default
    assert _expect(facts, _node("all-1g.10gb"), "all-disabled").allocatable == {"nvidia.com/gpu": 8}
    assert _expect(facts, _node("all-balanced", count="4")).allocatable["nvidia.com/mig-1g.10gb"] == 8


def test_allocatable_judged_by_the_config(default_config_text, article_spec):
    want = _expect(_facts({"default-mig-parted-config": default_config_text}, article_spec), _node("all-1g.10gb"))
    assert want.allocatable_problem({"nvidia.com/mig-1g.10gb": 56}) is None
    assert want.allocatable_problem({"nvidia.com/mig-1g.10gb": 49}) == (
        "allocatable differs from mig-parted config all-1g.10gb (ConfigMap gpu-operator/default-mig-parted-config) "
        "for H100-80GB (0x233010DE) x 8: nvidia.com/mig-1g.10gb 49 (expected 56)")


# -- site-specific configs -------------------------------------------------------------------
SITE = """
version: v1
mig-configs:
  all-disabled:
    - devices: all
      mig-enabled: false
  half-sliced:                       # a layout name NVIDIA's config does not have
    - devices: [0, 1, 2, 3]
      mig-enabled: false
    - device-filter: "0x233010DE"
      devices: [4, 5, 6, 7]
      mig-enabled: true
      mig-devices: {"1g.10gb": 7}
  all-balanced:                      # redefined by the site
    - device-filter: ["0x233010DE", "0x233110DE", "0x232210DE", "0x232410DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.10gb": 3, "2g.20gb": 2}
"""


@pytest.fixture
def site_facts(article_spec) -> ClusterFacts:
    spec = {**article_spec, "migManager": {**article_spec["migManager"], "config": {"name": "site-mig-config"}}}
    return _facts({"site-mig-config": SITE}, spec)


def test_custom_layout_judged_by_its_own_counts(site_facts):
    want = _expect(site_facts, _node("half-sliced"))
    assert want.allocatable == {"nvidia.com/gpu": 4, "nvidia.com/mig-1g.10gb": 28}
    assert want.mig.catalog is None and want.mig.catalog_disagreement() is None
    assert want.allocatable_problem({"nvidia.com/gpu": 4, "nvidia.com/mig-1g.10gb": 28}) is None
    assert want.allocatable_problem({"nvidia.com/mig-1g.10gb": 56}) == (
        "allocatable differs from mig-parted config half-sliced (ConfigMap gpu-operator/site-mig-config) for "
        "H100-80GB (0x233010DE) x 8: nvidia.com/gpu 0 (expected 4); nvidia.com/mig-1g.10gb 56 (expected 28)")


def test_redefined_all_balanced_disagrees_with_the_catalog(site_facts):
    want = _expect(site_facts, _node("all-balanced"))
    assert want.allocatable == {"nvidia.com/mig-1g.10gb": 24, "nvidia.com/mig-2g.20gb": 16}
    assert want.allocatable_problem(want.allocatable) is None  # the node is judged by the site's config
    assert want.mig.catalog_disagreement() == (
        "mig-parted config all-balanced (ConfigMap gpu-operator/site-mig-config) for H100-80GB (0x233010DE) x 8 "
        "gives {'nvidia.com/mig-1g.10gb': 24, 'nvidia.com/mig-2g.20gb': 16}, the MIG catalog "
        "{'nvidia.com/mig-1g.10gb': 16, 'nvidia.com/mig-2g.20gb': 8, 'nvidia.com/mig-3g.40gb': 8}: "
        "nvidia.com/mig-1g.10gb 24 (catalog 16); nvidia.com/mig-2g.20gb 16 (catalog 8); "
        "nvidia.com/mig-3g.40gb 0 (catalog 8)")


# -- could not check: never a silent catalog fallback ------------------------------------------
@pytest.mark.parametrize("configmaps, config, message", [
    ({}, "all-balanced", "ConfigMap gpu-operator/site-mig-config (mig-parted config, ClusterPolicy "
                         "spec.migManager.config.name) not found"),
    ({"site-mig-config": "version: v1\nmig-configs:\n  x:\n    - devices: all\n      mig-enabled: true\n"},
     "x", "ConfigMap gpu-operator/site-mig-config key config.yaml: mig-configs.x[0]: missing required field "
          "'mig-devices' when 'mig-enabled' is true"),
    ({"site-mig-config": SITE}, "all-1g.10gb", "ConfigMap gpu-operator/site-mig-config: no config 'all-1g.10gb' "
                                               "(it has 3: all-balanced, all-disabled, half-sliced)"),
    ({"site-mig-config": SITE.replace("0x233010DE", "0x20B210DE")}, "half-sliced",
     "ConfigMap gpu-operator/site-mig-config: config 'half-sliced' has no entry for GPU 4 (0x233010DE): "
     "mig-parted leaves it as it is"),
])
def test_config_that_cannot_tell_is_an_error(article_spec, configmaps, config, message):
    spec = {**article_spec, "migManager": {"config": {"name": "site-mig-config"}}}
    with pytest.raises(ClusterError) as err:
        _expect(_facts(configmaps, spec), _node(config))
    assert str(err.value) == message


def test_single_strategy_advertises_mig_devices_as_gpus(default_config_text, article_spec):
    """k8s-device-plugin internal/lm/mig-strategy.go: one profile per node, as nvidia.com/gpu;
    two profiles (all-balanced) are a layout single cannot serve."""
    facts = _facts({"default-mig-parted-config": default_config_text}, {**article_spec, "mig": {"strategy": "single"}})
    uniform = _expect(facts, _node("all-1g.10gb"))
    assert uniform.allocatable == {"nvidia.com/gpu": 56} and uniform.problem is None
    assert uniform.labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3-MIG-1g.10gb"
    assert uniform.labels["nvidia.com/gpu.count"] == "56"
    assert uniform.mig.catalog_disagreement() is None  # the config's MIG devices, whatever the strategy
    assert _expect(facts, _node("all-disabled")).labels["nvidia.com/gpu.product"] == "NVIDIA-H100-80GB-HBM3"
    mixed_layout = _expect(facts, _node("all-balanced"))
    assert mixed_layout.allocatable == {} and "under mig.strategy single every GPU must carry" in mixed_layout.problem


def test_unknown_model_is_read_from_the_unfiltered_entries(default_config_text, article_spec):
    """A product the catalog does not know: its PCI id is unknown, so only entries without
    device-filter apply (all-disabled); a filtered config cannot be told, and is no crash."""
    facts = _facts({"default-mig-parted-config": default_config_text}, article_spec)
    disabled = _expect(facts, _node("all-disabled", product="NVIDIA-H100-NVL-X"))
    assert disabled.allocatable == {"nvidia.com/gpu": 8} and disabled.mig.catalog is None
    with pytest.raises(ClusterError, match="is not in the MIG catalog, so its PCI id is unknown"):
        _expect(facts, _node("all-1g.10gb", product="NVIDIA-H100-NVL-X"))


def test_config_map_without_the_key(article_spec):
    facts = _facts({}, article_spec)
    facts.cluster.objects[f"/api/v1/namespaces/{NS}/configmaps/default-mig-parted-config"] = {"data": {"cfg": ""}}
    with pytest.raises(ClusterError, match="default-mig-parted-config has no key config.yaml \\(keys: cfg\\)"):
        _expect(facts, _node("all-balanced"))


# -- mig-parted's reading of the format --------------------------------------------------------
def test_last_matching_entry_wins_and_index_lists_apply():
    configs = parse("""
version: v1
mig-configs:
  c:
    - devices: all
      mig-enabled: false
    - devices: [1]
      mig-enabled: true
      mig-devices: {"3g.40gb": 2}
    - device-filter: "0x20B010DE"
      devices: all
      mig-enabled: true
      mig-devices: {}
""")
    assert [(g.mig_enabled, dict(g.devices)) for g in gpu_layouts(configs, "c", "0x233010de", 3)] == [
        (False, {}), (True, {"3g.40gb": 2}), (False, {})]
    assert [g.mig_enabled for g in gpu_layouts(configs, "c", "0x20B010DE", 2)] == [True, True]


@pytest.mark.parametrize("text, message", [
    ("mig-configs: {a: [{devices: all, mig-enabled: false}]}", "version must be v1, got None"),
    ("version: v1\nmig-configs: {}", "at least one entry in 'mig-configs' is required"),
    ("version: v1\nmig-configs: {a: []}", "at least one entry in 'a' is required"),
    ("version: v1\nmig-configs: {a: [{devices: some, mig-enabled: false}]}",
     "mig-configs.a[0].devices: 'all' or a list of GPU indexes, got 'some'"),
    ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, mig-devices: {1g.10gb: 1}}]}",
     "mig-configs.a[0]: MIG devices included when 'mig-enabled' is false"),
    ("version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, gpus: 2}]}",
     "mig-configs.a[0]: unexpected field gpus"),
    ("version: v1\nmig-configs: {a: [{device-filter: H100, devices: all, mig-enabled: false}]}",
     "device id 'H100' is not a number like 0x233010DE"),
])
def test_configs_mig_parted_refuses_are_refused(text, message):
    with pytest.raises(MigPartedError) as err:
        parse(text)
    assert str(err.value) == message


def test_subsystem_filter_cannot_be_decided():
    configs = parse(yaml.safe_dump({"version": "v1", "mig-configs": {"c": [
        {"device-filter": "0x233010DE:0x16C110DE", "devices": "all", "mig-enabled": False}]}}))
    with pytest.raises(MigPartedError, match="names a subsystem id"):
        gpu_layouts(configs, "c", "0x233010DE", 1)
