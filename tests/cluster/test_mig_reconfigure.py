"""Disruptive (opt-in, ``-m disruptive``): the MIG manager follows a relabel of
``nvidia.com/mig.config`` and back. It repartitions a GPU worker's GPUs: run it on a drained node."""
import pytest

from gpuconform.checks import check
from gpuconform.cluster import gpunode, migconfig, nodes
from gpuconform.plugin.cluster_fixtures import declared

pytestmark = [pytest.mark.disruptive, pytest.mark.mig]


def _target(cluster, want) -> tuple[str, str]:
    """(node, config to switch to) from cluster.mig_reconfigure, else the first MIG-capable worker."""
    node = want.mig_reconfigure.node or next(
        (nodes.name(n) for n in cluster.gpu_nodes() if nodes.labels(n).get("nvidia.com/mig.capable") == "true"), None)
    if node is None:
        pytest.skip("the profile names no node to repartition (cluster.mig_reconfigure.node: null: the first "
                    "MIG-capable worker) and no GPU worker is MIG-capable (label nvidia.com/mig.capable=true)")
    current = nodes.labels(cluster.node(node)).get(nodes.LABEL_MIG_CONFIG)
    to = want.mig_reconfigure.to or ("all-disabled" if current == "all-balanced" else "all-balanced")
    return node, to


@check("cluster.mig.reconfigure", "Relabelling mig.config repartitions the node, and back",
       fix="read the nvidia-mig-manager log on the node: GPUs in use (drain the node first), a config "
           "name unknown for this GPU model, or a GPU reset that needs a reboot; success but allocatable not "
           "following: the nvidia-device-plugin-daemonset pod on the node did not come back or advertises "
           "other devices (read its log)",
       needs=["cluster.operator.clusterpolicy_ready"])
def test_mig_reconfigure_round_trip(cluster, cluster_expected, cluster_session, expected_mig, evidence):
    """After relabelling nvidia.com/mig.config, mig.config.state goes pending -> success and
    allocatable converges to what the cluster's mig-parted config gives; the same holds when the
    original config is put back."""
    node, to = _target(cluster, cluster_expected)
    why = gpunode.mig_managed_why(cluster, declared(cluster_expected), cluster.node(node))
    if why:
        pytest.skip(why)
    steps = migconfig.round_trip(
        cluster.cluster, node, to, timeout=cluster_expected.timeouts.mig_reconfigure_s,
        cleanup=cluster_session.cleanup, expected_allocatable=lambda cfg: expected_mig(node, cfg).allocatable)
    evidence.add(f"{node} relabelled", "\n".join(
        f"{s.config}: states {' -> '.join(s.states)}; allocatable {s.allocatable}" for s in steps))
    problems = [s.problem for s in steps if s.problem]
    assert not problems, f"{node}: {problems[0]}"
