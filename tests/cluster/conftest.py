"""Cluster checks take the items they state a rule about from the profile and the cluster: one
test per GPU worker, per MIG resource offered, per expected ClusterPolicy value, per operand."""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from _pytest.mark.expression import Expression

from gpuconform.cluster import nodes
from gpuconform.cluster.errors import ClusterError
from gpuconform.node.facts import CannotTell
from gpuconform.once import Once
from gpuconform.plugin.cluster_fixtures import cluster_run
from gpuconform.plugin.keys import PROFILE

if TYPE_CHECKING:  # the kubernetes client loads only when a cluster check runs
    from gpuconform.cluster.workloads import PodRun, Workloads

NO_API = "<API server unreachable>"
NOT_SELECTED = "<not selected>"


def _selected(metafunc: pytest.Metafunc) -> bool:
    """Whether -m can select this check: if not, collecting it must not contact the cluster."""
    expr = metafunc.config.option.markexpr
    if not expr:
        return True
    names = {"cluster"} | {m.name for m in metafunc.definition.iter_markers()}
    return Expression.compile(expr).evaluate(lambda name, **kw: name in names)


def _cluster_items(config: pytest.Config, what: str) -> list[str]:
    """GPU worker names or MIG resources from the cluster (one list call, shared with the checks)."""
    run = cluster_run(config)
    if run.unreachable:
        return [NO_API]  # one item per check, reported "blocked by cluster.api.reachable"
    try:
        gpu_nodes = run.facts.gpu_nodes()
    except ClusterError:
        return [NO_API]
    if what == "gpu_node":
        return [nodes.name(n) for n in gpu_nodes]
    return list(nodes.mig_resources_offered(gpu_nodes))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    exp = metafunc.config.stash[PROFILE].profile.cluster  # no connection unless a cluster check is selected
    op = exp.gpu_operator
    selected = _selected(metafunc)
    table = {
        "spec_path": lambda: list(op.spec),
        "validator_env": lambda: list(op.validator_driver_env),
        "toleration": lambda: list(op.tolerations),
        "operand": lambda: list(op.operands),
        "excluded_namespace": lambda: list(exp.kyverno.excluded_namespaces),
        "gpu_node": lambda: _cluster_items(metafunc.config, "gpu_node") if selected else [NOT_SELECTED],
        "mig_resource": lambda: _cluster_items(metafunc.config, "mig_resource") if selected else [NOT_SELECTED],
    }
    for fixture, items in table.items():
        if fixture in metafunc.fixturenames:
            values = items()
            metafunc.parametrize(fixture, values, ids=[str(v) for v in values])


@pytest.fixture(scope="session")
def expected_mig(cluster, cluster_expected):
    """``expected_mig(node, config=None)``: the node's expected allocatable from the cluster's own
    mig-parted config (the one source of MIG counts for the checks), with the catalog's beside it."""
    from gpuconform.cluster import miglayout
    policy = cluster_expected.gpu_operator.cluster_policy
    return lambda node, config=None: miglayout.expected_for_node(cluster, policy, cluster.node(node), config)


# -- workload runs, shared by the checks that state one rule each about them ---------------------
@pytest.fixture(scope="session")
def _pod_runs() -> Once:
    """Each pod runs the first time a check asks; later checks get the same result (or the same
    "could not check", e.g. an image that cannot be pulled)."""
    return Once(ClusterError)


@pytest.fixture
def vectoradd_on_gpu(workloads: Workloads, cluster, _pod_runs: Once, evidence) -> PodRun:
    """cuda-vectoradd asking one whole GPU (``nvidia.com/gpu: 1``), run once per session."""
    from gpuconform.cluster.workloads import render
    offered = nodes.whole_gpus_offered(cluster.gpu_nodes())
    if not offered:
        pytest.skip("no GPU worker offers a whole nvidia.com/gpu (every GPU is MIG-partitioned)")
    run = _pod_runs.get("gpu", lambda: workloads.run(render(
        "cuda-vectoradd.yaml", "cuda-vectoradd-gpu", workloads.ns, workloads.images,
        limits={"nvidia.com/gpu": 1})))
    evidence.add(f"pod {run.name}", run.evidence())
    return run


@pytest.fixture
def vectoradd_on_mig(mig_resource: str, workloads: Workloads, _pod_runs: Once, evidence) -> PodRun:
    """cuda-vectoradd asking one slice of ``mig_resource``, run once per resource per session."""
    from gpuconform.cluster.workloads import render, safe_name
    run = _pod_runs.get(mig_resource, lambda: workloads.run(render(
        "cuda-vectoradd.yaml", safe_name("cuda-vectoradd", mig_resource), workloads.ns, workloads.images,
        limits={mig_resource: 1})))
    evidence.add(f"pod {run.name}", run.evidence())
    return run


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    """A GPU model the catalog does not know (no PCI id to read the mig-parted config for), or a
    MIG config it does not know where only it could tell: "could not check", not "failed"."""
    from gpuconform.mig import UnknownGpuModel, UnknownMigConfig
    try:
        return (yield)
    except (UnknownGpuModel, UnknownMigConfig) as exc:
        raise CannotTell(exc.args[0] if exc.args else str(exc)) from None
