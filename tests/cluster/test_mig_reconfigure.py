"""Disruptive (opt-in, ``-m disruptive``): the MIG manager follows a relabel of
``nvidia.com/mig.config`` and back. It repartitions a GPU worker's GPUs: run it on a drained node."""
import pytest

from gpuconform.checks import check
from gpuconform.cluster import migconfig, nodes
from gpuconform.mig import gpu_model, mixed_strategy_resources

pytestmark = [pytest.mark.disruptive, pytest.mark.mig]


def _target(cluster, want) -> tuple[str, str]:
    """(node, config to switch to) from cluster.mig_reconfigure, else the first MIG-capable worker."""
    node = want.mig_reconfigure.node or next(
        (nodes.name(n) for n in cluster.gpu_nodes() if nodes.labels(n).get("nvidia.com/mig.capable") == "true"), None)
    if node is None:
        pytest.skip("no MIG-capable GPU worker (label nvidia.com/mig.capable=true) and no cluster.mig_reconfigure.node")
    current = nodes.labels(cluster.node(node)).get(nodes.LABEL_MIG_CONFIG)
    to = want.mig_reconfigure.to or ("all-disabled" if current == "all-balanced" else "all-balanced")
    return node, to


@check("cluster.mig.reconfigure", "Relabelling mig.config repartitions the node, and back",
       fix="read the nvidia-mig-manager log on the node: GPUs in use (drain the node first), a config "
           "name unknown for this GPU model, or a GPU reset that needs a reboot",
       needs=["cluster.operator.clusterpolicy_ready"])
def test_mig_reconfigure_round_trip(cluster, cluster_expected, cluster_session, evidence):
    """After relabelling nvidia.com/mig.config, mig.config.state goes pending -> success and
    allocatable follows the MIG catalog; the same holds when the original config is put back."""
    node, to = _target(cluster, cluster_expected)
    want = cluster_expected.gpu_workers
    model = gpu_model(want.product)
    steps = migconfig.round_trip(
        cluster.cluster, node, to, timeout=cluster_expected.timeouts.mig_reconfigure_s,
        cleanup=cluster_session.cleanup,
        expected_allocatable=lambda cfg: mixed_strategy_resources(model, want.count, cfg))
    evidence.add(f"{node} relabelled", "\n".join(
        f"{s.config}: states {' -> '.join(s.states)}; allocatable {s.allocatable}" for s in steps))
    problems = [s.problem for s in steps if s.problem]
    assert not problems, f"{node}: {problems[0]}"
