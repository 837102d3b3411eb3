"""Per GPU worker: its GPU sharing is the profile's, GPU labels as GFD writes them for that
sharing, the MIG config it assigns applied where a MIG manager runs, allocatable exactly as the
device plugin advertises that platform (the cluster's own mig-parted config, MIG strategy,
time-slicing replicas), and the mig-parted config agreeing with the MIG catalog. (Ready:
test_api.py.)"""
import pytest

from gpuconform.checks import check
from gpuconform.cluster import gpunode, nodes
from gpuconform.plugin.cluster_fixtures import declared


def _mig_managed(cluster, cluster_expected, gpu_node) -> None:
    """Skip a MIG check where no MIG manager applies nvidia.com/mig.config, saying why."""
    why = gpunode.mig_managed_why(cluster, declared(cluster_expected), cluster.node(gpu_node))
    if why:
        pytest.skip(why)


@check("cluster.node.sharing", "GPU sharing on the worker is the profile's",
       fix="set the device plugin's sharing as the profile says (GPU Operator: mig.strategy and "
           "devicePlugin.config in the Helm values; the plugin alone: its config file), or correct "
           "cluster.gpu_workers.sharing in the profile",
       needs=["cluster.api.reachable"])
def test_gpu_sharing(cluster, cluster_expected, gpu_node):
    """The MIG strategy and time-slicing/MPS replicas the node's device plugin runs with equal
    cluster.gpu_workers.sharing (mode auto: whatever the cluster runs)."""
    want = cluster_expected.gpu_workers.sharing
    if want.mode == "auto":
        pytest.skip("cluster.gpu_workers.sharing.mode is auto (profile): the node is judged by what the cluster runs")
    how = gpunode.node_sharing(cluster, declared(cluster_expected), cluster.node(gpu_node), as_declared=False)
    got = how.mode
    if want.mode == "none" and got in ("mig-single", "mig-mixed"):
        got = "none"  # a MIG strategy without MIG devices is whole GPUs: the MIG config decides (allocatable)
    assert got == want.mode, f"{gpu_node} runs sharing {got!r} ({how.why}), the profile says {want.mode!r}"
    if want.replicas is not None:
        assert how.replicas() == want.replicas, (
            f"{gpu_node}: {how.replicas()} replicas per GPU ({how.why}), the profile says {want.replicas}")


@check("cluster.node.gpu_labels", "GPU worker's GPU labels are as GFD writes them for the profile's GPUs",
       fix="GPU Feature Discovery sets these labels: check the gpu-feature-discovery pod on this node; a count "
           "below the profile's means a GPU the driver does not see: run the node checks (pytest -m node) on "
           "this host; or correct cluster.gpu_workers (product, count, sharing) in the profile",
       needs=["cluster.api.reachable"])
def test_gpu_labels(cluster, cluster_expected, gpu_node):
    """Labels nvidia.com/gpu.present, gpu.product and gpu.count (and gpu.replicas when shared)
    equal what GFD writes for cluster.gpu_workers.product x count under the node's MIG strategy
    and sharing (single: <product>-MIG-<profile> and the MIG device count; time-slicing: -SHARED)."""
    want = gpunode.expected(cluster, declared(cluster_expected), cluster.node(gpu_node), with_allocatable=False).labels
    got = nodes.labels(cluster.node(gpu_node))
    wrong = [f"{k}={got.get(k)!r} (expected {v!r})" for k, v in want.items() if got.get(k) != v]
    assert not wrong, "; ".join(wrong)


@check("cluster.mig.config_label", "MIG config label is the one the profile assigns",
       fix="kubectl label node <node> nvidia.com/mig.config=<config> --overwrite (the MIG manager applies it)")
def test_mig_config_label(cluster, cluster_expected, gpu_node):
    """Label nvidia.com/mig.config equals the config cluster.gpu_workers.mig_configs assigns to this node."""
    want = cluster_expected.gpu_workers.mig_config_for(gpu_node)
    if want is None:
        pytest.skip(f"the profile assigns no MIG config to {gpu_node} (cluster.gpu_workers.mig_configs)")
    _mig_managed(cluster, cluster_expected, gpu_node)
    got = nodes.labels(cluster.node(gpu_node)).get(nodes.LABEL_MIG_CONFIG)
    assert got == want, f"{nodes.LABEL_MIG_CONFIG}={got!r}, expected {want!r}"


@check("cluster.mig.config_state", "MIG manager applied the node's config",
       fix="read the nvidia-mig-manager pod log on this node: a GPU in use blocks the change; "
           "stop GPU workloads there and relabel, or reboot the node if a GPU reset is pending")
def test_mig_config_state(cluster, cluster_expected, gpu_node):
    """Label nvidia.com/mig.config.state is "success", where a MIG manager runs."""
    _mig_managed(cluster, cluster_expected, gpu_node)
    got = nodes.labels(cluster.node(gpu_node)).get(nodes.LABEL_MIG_STATE)
    config = nodes.labels(cluster.node(gpu_node)).get(nodes.LABEL_MIG_CONFIG)
    assert got == "success", f"{nodes.LABEL_MIG_STATE}={got!r} for mig.config={config!r}, expected 'success'"


@check("cluster.mig.allocatable", "Allocatable GPU/MIG resources are what the device plugin advertises for the platform",
       fix="restart the device plugin pod on this node so it re-advertises its devices; MIG counts wrong: the "
           "MIG manager did not create them (see its log); shared counts wrong: the plugin's sharing config",
       needs=["cluster.node.gpu_labels", "cluster.mig.config_state"])
def test_allocatable_matches_config(cluster, cluster_expected, gpu_node, evidence):
    """Allocatable nvidia.com/gpu and nvidia.com/mig-* equal what the device plugin advertises: the
    GPUs (or, where the MIG manager runs, what the cluster's mig-parted config gives under the
    node's nvidia.com/mig.config) named by the MIG strategy, times the sharing replicas."""
    want = gpunode.expected(cluster, declared(cluster_expected), cluster.node(gpu_node))
    got = nodes.gpu_allocatable(cluster.node(gpu_node))
    evidence.add("allocatable (nvidia.com/*)", "\n".join(f"{k}: {v}" for k, v in got.items()) or "(none)")
    evidence.add("expected", f"{want.source}: {want.allocatable or 'nothing'}\n(read from: {want.why})")
    assert want.problem is None, want.problem
    problem = want.allocatable_problem(got)
    assert problem is None, problem


@check("cluster.mig.catalog_agrees", "The cluster's mig-parted config agrees with the MIG catalog",
       fix="the cluster's config (kubectl -n gpu-operator get cm <spec.migManager.config.name> -o yaml) "
           "gives this config other counts than NVIDIA's default-mig-parted-config: if the site meant it, "
           "waive this finding; else restore NVIDIA's entry (or name the site's layout differently)",
       needs=["cluster.node.gpu_labels"])
def test_config_agrees_with_catalog(cluster, cluster_expected, gpu_node, evidence):
    """The MIG devices the cluster's mig-parted config gives the node's config equal the MIG
    catalog's for the same config name, model and GPU count (a config or GPU model the catalog
    does not know has nothing to be cross-checked against)."""
    _mig_managed(cluster, cluster_expected, gpu_node)
    want = gpunode.expected(cluster, declared(cluster_expected), cluster.node(gpu_node)).mig
    if want.catalog is None:
        evidence.add("MIG catalog", f"config {want.config} for {want.model} is not in the catalog: cross-check skipped")
        return
    problem = want.catalog_disagreement()
    assert problem is None, problem
