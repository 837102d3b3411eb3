"""Profiles: validated on load, one line naming file and field, exit code 4 from the suite."""
import textwrap

import pytest

from gpuconform import profile

GOOD = """
name: t
node:
  driver: {version: 580.95.05}
  gpu: {product: NVIDIA H100 80GB HBM3, count: 8}
groups:
  - match: ["gpu-mig-*"]
    node: {mig: {mode: enabled}, gpu: {count: 4}}
"""


def write(tmp_path, text):
    p = tmp_path / "p.yaml"
    p.write_text(textwrap.dedent(text))
    return str(p)


def test_groups_override_defaults_per_host(tmp_path):
    lp = profile.load(write(tmp_path, GOOD))
    assert (lp.node_for("gpu-mig-1").mig.mode, lp.node_for("gpu-mig-1").gpu.count) == ("enabled", 4)
    assert (lp.node_for("gpu-3").mig.mode, lp.node_for("gpu-3").gpu.count) == ("any", 8)
    assert lp.node_for("gpu-3").gpu.product == "NVIDIA H100 80GB HBM3"


def test_groups_are_validated_once_and_laid_over_the_node_section(tmp_path):
    """A group sets only what differs (a typed partial section): the rest is the node section's, a
    sysctl rule is added key by key; resolving a host validates nothing again."""
    lp = profile.load(write(tmp_path, GOOD + "  - match: [gpu-mig-2]\n    node: {sysctl: {vm.swappiness: {max: 10}}}\n"
                                             "  - match: ['gpu-tk-*']\n    node: {container_runtime: "
                                             "{runtime_binary: /usr/local/nvidia/toolkit/nvidia-container-runtime}}\n"))
    assert isinstance(lp.profile.node, profile.NodeExpectations)
    assert lp.profile.groups[0].node.model_fields_set == {"mig", "gpu"}
    tk = lp.node_for("gpu-tk-1").container_runtime
    assert (tk.runtime_binary, tk.engine, tk.injection) == (
        "/usr/local/nvidia/toolkit/nvidia-container-runtime", "containerd", "default-runtime")
    inputs = lp.probe_inputs()
    assert inputs.runtime_binaries == ("/usr/bin/nvidia-container-runtime",
                                       "/usr/local/nvidia/toolkit/nvidia-container-runtime")
    assert lp.node_for("gpu-mig-2").sysctl["vm.swappiness"].max == 10 and lp.sysctl_keys() == ("vm.swappiness",)
    assert inputs.units == ("nvidia-persistenced.service", "nvidia-fabricmanager.service", "containerd.service")


def test_every_field_has_a_description():
    from gpuconform.profile import reference
    missing = [row.path for row in reference.rows(profile.Profile) if not row.description]
    assert not missing, f"profile fields without a description: {missing}"


@pytest.mark.parametrize("mutation, message", [
    (("580.95.05", "'580.95'"), None),
    (("580.95.05", "580.95"), 'node.driver.version: Value error, a driver version in quotes, like "580.95"'),
    (("580.95.05", "latest"), "node.driver.version: Value error, a driver version like 580.95.05, got 'latest'"),
    (("count: 8", "count: -1"), "node.gpu.count: Input should be greater than or equal to 0, got -1"),
    (("count: 4", "count: many"), "groups.0.node.gpu.count: Input should be a valid integer"),
    (("mode: enabled", "mode: sometimes"), "groups.0.node.mig.mode: Input should be 'enabled', 'disabled' or 'any'"),
    (("name: t", "name: t\nbogus: 1"), "bogus: unknown field (a typo?)"),
    (("mode: enabled", "mode: enabled, bogus: 1"), "groups.0.node.mig.bogus: unknown field (a typo?)"),  # never its value: a typo of a secret's key
    (("{mig: {mode: enabled}", "{container_runtime: {runtime_binary: usr/bin/x}, mig: {mode: enabled}"),
     "groups.0.node.container_runtime.runtime_binary: String should match pattern"),
    (("gpu: {count: 4}", "gpu: {count: 4}, driver: {version: '580'}"),
     "groups.0.node.driver.version: Value error, a driver version like 580.95.05, got '580'"),
])
def test_errors_name_the_field(tmp_path, mutation, message):
    path = write(tmp_path, GOOD.replace(*mutation))
    if message is None:
        profile.load(path)
        return
    with pytest.raises(profile.ProfileError) as err:
        profile.load(path)
    assert str(err.value).startswith(f"{path}: {message}") and "\n" not in str(err.value)


def test_yaml_syntax_error_names_line(tmp_path):
    with pytest.raises(profile.ProfileError, match=r"not valid YAML at line \d+, column \d+"):
        profile.load(write(tmp_path, "name: t\nnode: [unclosed\n"))


def test_missing_file(tmp_path):
    with pytest.raises(profile.ProfileError, match="cannot read profile: No such file"):
        profile.load(str(tmp_path / "nope.yaml"))


@pytest.mark.parametrize("name", ["seed-h100.yaml", "h200-devbox.yaml"])
def test_shipped_profiles_are_valid(name):
    from runner import REPO
    lp = profile.load(REPO / "profiles" / name)
    assert lp.node_for("any-host").driver.version


def test_bad_profile_is_one_line_and_exit_4(suite, tmp_path):
    bad = write(tmp_path, GOOD.replace("580.95.05", "latest"))
    proc, results = suite("-m", "node", "--hosts=local://", f"--profile={bad}")
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert proc.stderr.strip() == f"ERROR: {bad}: node.driver.version: Value error, a driver version like 580.95.05, got 'latest'"
    assert "Traceback" not in proc.stdout + proc.stderr and results is None


def test_every_error_is_listed_in_the_authors_words(tmp_path):
    """All of a profile's mistakes on one line, with field paths and no pydantic type names (issue #25)."""
    bad = tmp_path / "p.yaml"
    bad.write_text("name: t\nnode:\n  gpu: {count: many}\n  sysctl: {vm.swappiness: 10}\n"
                   "  kernel: {cmdline_required: module.sig_enforce=0}\n  bogus: 1\n")
    with pytest.raises(profile.ProfileError) as err:
        profile.load(bad)
    line = str(err.value)
    assert "\n" not in line and line.count("; ") >= 3, line
    for says in ("node.gpu.count: Input should be a valid integer", "node.sysctl.vm.swappiness: Input should be a mapping",
                 "node.kernel.cmdline_required: Input should be a list", "node.bogus: unknown field (a typo?)"):
        assert says in line, line
    assert "SysctlRule" not in line and "tuple" not in line and "more)" not in line, line


def test_any_layer_may_be_null(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("name: t\nnode: null\ncluster: null\nkubeflow: null\n")
    loaded = profile.load(p)
    assert loaded.profile.node is None and loaded.profile.kubeflow.url is None
    assert loaded.profile.cluster == profile.ClusterExpectations()


def test_a_cluster_policy_value_outside_the_crds_set_is_refused_at_load(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("name: t\ncluster:\n  gpu_operator:\n    spec: {mig.strategy: singel, driver.enabled: false}\n")
    with pytest.raises(profile.ProfileError, match=r"cluster\.gpu_operator\.spec: Value error, mig\.strategy: 'singel' "
                                                   r"is not one of 'none', 'single', 'mixed'"):
        profile.load(p)


def test_the_enum_table_is_the_operators_crd():
    """catalogs.CLUSTER_POLICY_ENUMS equals every enum of the ClusterPolicy CRD the bed's operator
    module ships (deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml)."""
    import yaml
    from gpuconform.profile import catalogs
    from testbed.gpuoperator import binaries
    crd = yaml.safe_load((binaries.module_dir() / "deployments" / "gpu-operator" / "crds" /
                          "nvidia.com_clusterpolicies.yaml").read_text())
    found = {}

    def walk(node, path):
        if "enum" in node and path:
            found[".".join(path)] = tuple(node["enum"])
        for key, sub in (node.get("properties") or {}).items():
            walk(sub, [*path, key])
    walk(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"], [])
    assert found == catalogs.CLUSTER_POLICY_ENUMS


def test_os_release_and_containerd_config_version_are_profile_fields(tmp_path):
    """A site says its OS release and containerd config version (no 'unknown field'); a release YAML
    reads as a number is refused, said as the author wrote it (issue #25)."""
    lp = profile.load(write(tmp_path, GOOD.replace("node:\n", "node:\n  os_version: '8'\n"
                                                   "  container_runtime: {config_version: 3}\n", 1)))
    assert (lp.node_for("gpu-1").os_version, lp.node_for("gpu-1").container_runtime.config_version) == ("8", 3)
    with pytest.raises(profile.ProfileError) as err:
        profile.load(write(tmp_path, GOOD.replace("node:\n", "node:\n  os_version: 22.04\n"
                                                  "  container_runtime: {config_version: 4}\n", 1)))
    assert 'node.os_version: Value error, an OS release in quotes, like "22.04"' in str(err.value)
    assert "node.container_runtime.config_version: Input should be 1, 2 or 3, got 4" in str(err.value)


def test_version_id_matches_the_release_and_its_point_releases():
    from gpuconform.parsers.kernel import os_version_matches
    assert [os_version_matches(v, "8") for v in ("8", "8.0", "8.10", "80", "7.3")] == [True, True, True, False, False]
    assert [os_version_matches(v, "8.0") for v in ("8.0", "8.0.1", "8.1")] == [True, True, False]


@pytest.mark.parametrize("where, says", [
    ("mig_configs:\n      - {match: [w-1], config: all-1g.10gbb}",
     "cluster.gpu_workers: Value error, mig_configs.0.config: 'all-1g.10gbb' is not a mig-parted config of "
     "NVIDIA-H100-80GB-HBM3 (known: all-1g.10gb, "),
    ("default_mig_config: all-balancd", "default_mig_config: 'all-balancd' is not a mig-parted config"),
    ("mig_configs: []\n  mig_reconfigure: {to: all-3g.40gbb}",
     "cluster: Value error, mig_reconfigure.to: 'all-3g.40gbb' is not a mig-parted config"),
])
def test_a_mig_config_name_the_catalog_does_not_know_is_refused_at_load(tmp_path, where, says):
    """A MIG config name is one of the GPU Operator's default configs for the profile's GPU (the
    MIG catalog) or one the profile declares as the site's own (issue #25)."""
    text = f"name: t\ncluster:\n  gpu_workers:\n    {where}\n"
    with pytest.raises(profile.ProfileError) as err:
        profile.load(write(tmp_path, text))
    assert says in str(err.value), str(err.value)
    own = text.replace("gpu_workers:\n", "gpu_workers:\n    custom_mig_configs: [all-1g.10gbb, all-balancd, "
                                         "all-3g.40gbb]\n")
    assert profile.load(write(tmp_path, own))


def test_spec_is_merged_over_the_defaults(tmp_path):
    """Setting cluster.gpu_operator.spec keeps the defaults it does not name; null drops one (issue #25)."""
    from gpuconform.profile.catalogs import ARTICLE_CLUSTER_POLICY
    lp = profile.load(write(tmp_path, "name: t\ncluster:\n  gpu_operator:\n    spec: {mig.strategy: single, "
                                      "vfioManager.enabled: null, migManager.enabled: false}\n"))
    want = {**ARTICLE_CLUSTER_POLICY, "mig.strategy": "single", "migManager.enabled": False}
    del want["vfioManager.enabled"]
    assert lp.profile.cluster.gpu_operator.spec == want
