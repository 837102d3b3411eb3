"""Per GPU worker: GPU labels as the profile says, the MIG config it assigns applied,
allocatable GPU / MIG resources exactly as the cluster's own mig-parted config gives them, and
that config agreeing with the MIG catalog. (Ready: test_api.py.)"""
import pytest

from gpuconform.checks import check
from gpuconform.cluster import nodes

pytestmark = pytest.mark.mig


@check("cluster.node.gpu_labels", "GPU worker's GPU labels are as the profile says",
       fix="GPU Feature Discovery and the GPU Operator set these labels: check the gpu-feature-discovery "
           "pod on this node; a count below the profile's means a GPU the driver does not see: run the "
           "node checks (pytest -m node) on this host; or correct cluster.gpu_workers in the profile")
def test_gpu_labels(cluster, cluster_expected, gpu_node):
    """Labels nvidia.com/gpu.present=true, nvidia.com/gpu.product and nvidia.com/gpu.count equal the
    profile's cluster.gpu_workers.product and count."""
    want_workers = cluster_expected.gpu_workers
    want = {nodes.LABEL_PRESENT: "true", nodes.LABEL_PRODUCT: want_workers.product,
            nodes.LABEL_COUNT: str(want_workers.count)}
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
    got = nodes.labels(cluster.node(gpu_node)).get(nodes.LABEL_MIG_CONFIG)
    assert got == want, f"{nodes.LABEL_MIG_CONFIG}={got!r}, expected {want!r}"


@check("cluster.mig.config_state", "MIG manager applied the node's config",
       fix="read the nvidia-mig-manager pod log on this node: a GPU in use blocks the change; "
           "stop GPU workloads there and relabel, or reboot the node if a GPU reset is pending")
def test_mig_config_state(cluster, cluster_expected, gpu_node):
    """Label nvidia.com/mig.config.state is "success"."""
    got = nodes.labels(cluster.node(gpu_node)).get(nodes.LABEL_MIG_STATE)
    config = nodes.labels(cluster.node(gpu_node)).get(nodes.LABEL_MIG_CONFIG)
    assert got == "success", f"{nodes.LABEL_MIG_STATE}={got!r} for mig.config={config!r}, expected 'success'"


@check("cluster.mig.allocatable", "Allocatable GPU/MIG resources match the cluster's mig-parted config",
       fix="restart the nvidia-device-plugin-daemonset pod on this node so it re-advertises the MIG "
           "devices; if the counts stay wrong, the MIG manager did not create them: see its log",
       needs=["cluster.node.gpu_labels", "cluster.mig.config_state"])
def test_allocatable_matches_config(cluster, gpu_node, expected_mig, evidence):
    """Allocatable nvidia.com/gpu and nvidia.com/mig-* equal what the cluster's mig-parted config
    (the ConfigMap of ClusterPolicy spec.migManager.config.name) gives the node's GPU model x
    nvidia.com/gpu.count under its nvidia.com/mig.config (mixed strategy)."""
    want, got = expected_mig(gpu_node), nodes.gpu_allocatable(cluster.node(gpu_node))
    evidence.add("allocatable (nvidia.com/*)", "\n".join(f"{k}: {v}" for k, v in got.items()) or "(none)")
    evidence.add("expected", f"{want}: {want.resources or 'nothing'}")
    problem = want.allocatable_problem(got)
    assert problem is None, problem


@check("cluster.mig.catalog_agrees", "The cluster's mig-parted config agrees with the MIG catalog",
       fix="the cluster's config (kubectl -n gpu-operator get cm <spec.migManager.config.name> -o yaml) "
           "gives this config other counts than NVIDIA's default-mig-parted-config: if the site meant it, "
           "waive this finding; else restore NVIDIA's entry (or name the site's layout differently)",
       needs=["cluster.node.gpu_labels"])
def test_config_agrees_with_catalog(cluster, gpu_node, expected_mig, evidence):
    """The counts the cluster's mig-parted config gives the node's config equal the MIG catalog's
    for the same config name, model and GPU count (a config the catalog does not know has nothing
    to be cross-checked against: the node is judged by the cluster's config alone)."""
    want = expected_mig(gpu_node)
    if want.catalog is None:
        evidence.add("MIG catalog", f"no config {want.config} for {want.model.key}: site-specific, nothing to cross-check")
        return
    problem = want.catalog_disagreement()
    assert problem is None, problem
