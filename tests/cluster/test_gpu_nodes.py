"""Per GPU worker: GPU labels as the profile says, the MIG config it assigns applied, and
allocatable GPU / MIG resources exactly as the MIG catalog computes them. (Ready: test_api.py.)"""
import pytest

from gpuconform.checks import check
from gpuconform.cluster import nodes
from gpuconform.mig import gpu_model, mixed_strategy_resources

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


@check("cluster.mig.allocatable", "Allocatable GPU/MIG resources match the MIG catalog",
       fix="restart the nvidia-device-plugin-daemonset pod on this node so it re-advertises the MIG "
           "devices; if the counts stay wrong, the MIG manager did not create them: see its log",
       needs=["cluster.node.gpu_labels", "cluster.mig.config_state"])
def test_allocatable_matches_catalog(cluster, cluster_expected, gpu_node, evidence):
    """Allocatable nvidia.com/gpu and nvidia.com/mig-* equal what the MIG catalog computes for the
    profile's GPU model x count x the node's nvidia.com/mig.config (mixed strategy)."""
    want_workers = cluster_expected.gpu_workers
    node = cluster.node(gpu_node)
    config = nodes.labels(node).get(nodes.LABEL_MIG_CONFIG) or "all-disabled"
    model = gpu_model(want_workers.product)
    want = mixed_strategy_resources(model, want_workers.count, config)
    got = nodes.gpu_allocatable(node)
    evidence.add("allocatable (nvidia.com/*)", "\n".join(f"{k}: {v}" for k, v in got.items()) or "(none)")
    diff = [f"{r} {got.get(r, 0)} (expected {want.get(r, 0)})" for r in sorted(set(want) | set(got))
            if got.get(r, 0) != want.get(r, 0)]
    assert not diff, f"allocatable differs from the MIG catalog for {model.key} x {want_workers.count} x {config}: " + "; ".join(diff)
