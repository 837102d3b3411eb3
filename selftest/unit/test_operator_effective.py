"""cluster.operator.spec compares the operator's effective value: an absent ClusterPolicy value is
the operator's default. Proven on the ClusterPolicy NVIDIA's own Helm chart renders with the
article's values (which leaves sandboxDevicePlugin.enabled out) and on the chart's CRD."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpuconform.cluster import operator
from gpuconform.profile import load

REPO = Path(__file__).resolve().parents[2]


def _article_spec_expectations() -> dict:
    return load(REPO / "profiles" / "seed-h100.yaml").profile.cluster.gpu_operator.spec


def _crd_schema_defaults(crd: dict) -> tuple[dict, set]:
    """(dotted path -> schema default) outside lists, and every boolean ``*.enabled`` path."""
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    defaults, enabled = {}, set()

    def walk(node: dict, path: str) -> None:
        if "default" in node:
            defaults[path] = node["default"]
        if path.endswith(".enabled") and node.get("type") == "boolean":
            enabled.add(path)
        for key, child in (node.get("properties") or {}).items():
            walk(child, f"{path}.{key}" if path else key)
    walk(spec, "")
    return defaults, enabled


def test_defaults_table_covers_the_crd(gpu_operator_module):
    """Every schema default of NVIDIA's ClusterPolicy CRD is in the table with the same value, and
    every boolean *.enabled has a default there: no absent boolean is ever compared literally."""
    crd = yaml.safe_load((gpu_operator_module / "deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml")
                         .read_text())
    defaults, enabled = _crd_schema_defaults(crd)
    assert defaults and enabled
    assert {p: operator.OPERATOR_DEFAULTS.get(p, "<not in table>") for p in defaults} == defaults
    assert sorted(enabled - set(operator.OPERATOR_DEFAULTS)) == []
    assert set(operator.OPERATOR_DEFAULTS) <= enabled | set(defaults) | {
        "mig.strategy", "cdi.default", "driver.rdma.useHostMofed", "driver.useNvidiaDriverCRD",
        "driver.usePrecompiled", "driver.licensingConfig.nlsEnabled"}


def test_article_clusterpolicy_passes_where_the_literal_compare_failed(render_cluster_policy):
    """The chart writes sandboxDevicePlugin.enabled only when true: with the article's values it is
    absent. The literal compare said "unset, expected False"; the effective value is False."""
    spec = render_cluster_policy()["spec"]
    assert operator.spec_value(spec, "sandboxDevicePlugin.enabled") is operator.MISSING
    assert operator.effective_spec_value(spec, "sandboxDevicePlugin.enabled") == (operator.MISSING, False)
    want = _article_spec_expectations()
    assert "sandboxDevicePlugin.enabled" in want
    assert {path: operator.spec_mismatch(spec, path, value) for path, value in want.items()} == dict.fromkeys(want)


def test_null_is_absent(render_cluster_policy):
    """The chart renders migManager.config.name: null; the API server prunes it and the CRD's
    default applies."""
    spec = render_cluster_policy()["spec"]
    assert spec["migManager"]["config"]["name"] is None
    assert operator.effective_spec_value(spec, "migManager.config.name")[1] == "default-mig-parted-config"


def test_sandbox_device_plugin_enabled_still_fails(render_cluster_policy):
    spec = render_cluster_policy(sandboxDevicePlugin={"enabled": True})["spec"]
    assert operator.spec_mismatch(spec, "sandboxDevicePlugin.enabled", False) == (
        "spec.sandboxDevicePlugin.enabled is True, expected False")


@pytest.mark.parametrize("path, want, message", [
    ("driver.enabled", False, "spec.driver.enabled is unset (the operator's default: True), expected False"),
    ("mig.strategy", "mixed", "spec.mig.strategy is unset (the operator's default: 'none'), expected 'mixed'"),
    ("vendor.custom", 1, "spec.vendor.custom is unset (no operator default), expected 1"),
])
def test_unset_value_with_another_default_fails_naming_it(path, want, message):
    """The profile expects what the operator's default is not: the fix (set it) clears it."""
    assert operator.spec_mismatch({}, path, want) == message
    set_it = {}
    node = set_it
    *parents, leaf = path.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[leaf] = want
    assert operator.spec_mismatch(set_it, path, want) is None
