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
from gpuconform.plugin import params
from gpuconform.plugin.cluster_fixtures import cluster_run
from gpuconform.plugin.fixtures import setting_up
from gpuconform.plugin.keys import PROFILE

if TYPE_CHECKING:  # the kubernetes client loads only when a cluster check runs
    from gpuconform.cluster.workloads import PodRun, Workloads

NO_API = "<API server unreachable>"
NOT_SELECTED = "<not selected>"
NO_GPU_NODE = "<no GPU worker>"
NO_MIG = "<no MIG resource offered>"
NO_OPERATOR = "<no GPU Operator>"


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
        return [nodes.name(n) for n in gpu_nodes] or [NO_GPU_NODE]
    if what == "operand":
        from gpuconform.cluster import operator
        try:
            policy = run.facts.cluster_policy(run.expected.gpu_operator.cluster_policy)
        except ClusterError:
            return [NO_API]
        return operator.enabled_operands((policy or {}).get("spec") or {})
    return list(nodes.mig_resources_offered(gpu_nodes)) or [NO_MIG]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    exp = metafunc.config.stash[PROFILE].profile.cluster  # no connection unless a cluster check is selected
    op = exp.gpu_operator
    selected = _selected(metafunc)
    # the profile says the platform has no GPU Operator: its checks get one item, skipped saying so
    no_operator = (lambda items: [NO_OPERATOR]) if exp.gpu_stack == "device-plugin" else (lambda items: items)
    table = {
        "spec_path": lambda: no_operator(list(op.spec)),
        "validator_env": lambda: no_operator(list(op.validator_driver_env)),
        "toleration": lambda: no_operator(list(op.tolerations)),
        "operand": lambda: no_operator(list(op.operands) if op.operands is not None else (
            _cluster_items(metafunc.config, "operand") if selected else [NOT_SELECTED])),
        "excluded_namespace": lambda: list(exp.kyverno.excluded_namespaces),
        "gpu_node": lambda: _cluster_items(metafunc.config, "gpu_node") if selected else [NOT_SELECTED],
        "mig_resource": lambda: _cluster_items(metafunc.config, "mig_resource") if selected else [NOT_SELECTED],
    }
    fields = {"spec_path": "cluster.gpu_operator.spec", "validator_env": "cluster.gpu_operator.validator_driver_env",
              "toleration": "cluster.gpu_operator.tolerations",
              "operand": "cluster.gpu_operator.operands, or the operands the ClusterPolicy enables",
              "excluded_namespace": "cluster.kyverno.excluded_namespaces"}
    # a GPU worker check when the cluster has none: one result saying why, in the cluster's words
    # (never pytest's "empty parameter set"); a mark, not a fixture every worker's check would run
    skipped = {"gpu_node": {NO_GPU_NODE: f"no node matches cluster.gpu_workers.selector {exp.gpu_workers.selector} "
                                         f"(judged by cluster.nodes.gpu_workers)"}}
    for fixture, items in table.items():
        if fixture in metafunc.fixturenames:
            params.parametrize(metafunc, fixture, items(), fields.get(fixture, fixture), skipped=skipped.get(fixture))


@pytest.fixture
def _nothing_to_judge(_gpuconform_config: pytest.Config, cluster_expected):
    """A check parametrized over MIG resources when no GPU worker offers one: one result saying why,
    in the cluster's words (never pytest's "empty parameter set"). The MIG checks use it
    (``usefixtures``), before the fixture that would run a pod on the resource."""
    request = setting_up(_gpuconform_config)._request
    if getattr(getattr(request.node, "callspec", None), "params", {}).get("mig_resource") == NO_MIG:
        cluster = request.getfixturevalue("cluster")
        pytest.skip(_mig_should_be_offered(cluster, cluster_expected, request.getfixturevalue("expected_mig"))
                    or _why_no_mig(cluster, cluster_expected))


def _mig_should_be_offered(cluster, cluster_expected, expected_mig) -> str | None:
    """Why the MIG checks are blocked when the profile's platform offers MIG resources that no GPU
    worker offers: the profile declares them and the platform lacks them, a failure of the check
    that judges it (the worker's sharing mode, else its allocatable), never a skip for the
    cluster's shape (issue #26). None when the profile's platform offers none either."""
    from gpuconform.checks import REGISTRY
    from gpuconform.cluster import gpunode
    from gpuconform.mig import RESOURCE_MIG_PREFIX
    from gpuconform.plugin.cluster_fixtures import declared
    from gpuconform.plugin.gating import blocked
    gpu_nodes = cluster.gpu_nodes()
    if cluster_expected.gpu_workers.sharing.mode == "mig-mixed":
        for n in gpu_nodes:
            how = gpunode.node_sharing(cluster, declared(cluster_expected), n, as_declared=False)
            if how.mode != "mig-mixed":
                return blocked("cluster.node.sharing", REGISTRY["cluster.node.sharing"]["title"],
                               f"{nodes.name(n)} runs sharing {how.mode!r} ({how.why}), the profile says 'mig-mixed'")
    should = {nodes.name(n): mig for n in gpu_nodes
              if (mig := {r: c for r, c in expected_mig(nodes.name(n)).allocatable.items() if r.startswith(RESOURCE_MIG_PREFIX)})}
    if should:
        return blocked("cluster.mig.allocatable", REGISTRY["cluster.mig.allocatable"]["title"],
                       f"no GPU worker offers {RESOURCE_MIG_PREFIX}* resources; the platform should: {should}")
    return None


def _why_no_mig(cluster, cluster_expected) -> str:
    from gpuconform.cluster import gpunode
    from gpuconform.plugin.cluster_fixtures import declared
    gpu_nodes = cluster.gpu_nodes()
    if not gpu_nodes:
        return "no GPU worker offers nvidia.com/mig-* resources: there is no GPU worker (cluster.nodes.gpu_workers)"
    how = gpunode.node_sharing(cluster, declared(cluster_expected), gpu_nodes[0])
    read = how.why.split("; ")[0]
    if how.strategy == "single":
        return (f"no GPU worker offers nvidia.com/mig-* resources: MIG strategy single ({read}) offers MIG "
                f"devices as nvidia.com/gpu, judged by cluster.workload.vectoradd_gpu")
    if how.strategy == "none":
        return f"no GPU worker offers nvidia.com/mig-* resources: MIG strategy none ({read})"
    return "no GPU worker offers nvidia.com/mig-* resources: no GPU worker's MIG config creates MIG devices"


@pytest.fixture(scope="session")
def expected_mig(cluster, cluster_expected):
    """``expected_mig(node, config=None)``: what the node should advertise under ``config`` (the
    one source of allocatable for the checks: gpuconform/cluster/gpunode.py)."""
    from gpuconform.cluster import gpunode
    from gpuconform.plugin.cluster_fixtures import declared
    platform = declared(cluster_expected)
    return lambda node, config=None: gpunode.expected(cluster, platform, cluster.node(node), config)


# -- workload runs, shared by the checks that state one rule each about them ---------------------
@pytest.fixture(scope="session")
def _pod_runs() -> Once:
    """Each pod runs the first time a check asks; later checks get the same result (or the same
    "could not check", e.g. an image that cannot be pulled)."""
    return Once(ClusterError)


def no_whole_gpu(gpu_nodes: list[dict], expected_mig) -> str:
    """Why vectoradd cannot ask a whole GPU when no GPU worker offers one: blocked by
    cluster.mig.allocatable where the platform should offer some, else the profile's own reason."""
    from gpuconform.checks import REGISTRY
    from gpuconform.mig import RESOURCE_GPU
    from gpuconform.plugin.gating import blocked
    should = {nodes.name(n): c for n in gpu_nodes if (c := expected_mig(nodes.name(n)).allocatable.get(RESOURCE_GPU, 0))}
    if should:
        return blocked("cluster.mig.allocatable", REGISTRY["cluster.mig.allocatable"]["title"],
                       f"no GPU worker offers {RESOURCE_GPU}; the platform should: {should}")
    return (f"the profile's platform offers no {RESOURCE_GPU} (every GPU is MIG-partitioned under the mixed "
            "strategy, or its replicas are renamed)")


@pytest.fixture
def vectoradd_on_gpu(workloads: Workloads, cluster, expected_mig, _pod_runs: Once, evidence) -> PodRun:
    """cuda-vectoradd asking one whole GPU (``nvidia.com/gpu: 1``), run once per session. With no
    whole GPU offered: blocked by cluster.mig.allocatable where the platform should offer one,
    skipped where the profile's platform offers none."""
    if not nodes.whole_gpus_offered(cluster.gpu_nodes()):
        pytest.skip(no_whole_gpu(cluster.gpu_nodes(), expected_mig))
    return vectoradd_run(workloads, _pod_runs, evidence, "nvidia.com/gpu")


@pytest.fixture
def vectoradd_on_mig(mig_resource: str, workloads: Workloads, _pod_runs: Once, evidence) -> PodRun:
    """cuda-vectoradd asking one slice of ``mig_resource``, run once per resource per session."""
    return vectoradd_run(workloads, _pod_runs, evidence, mig_resource)


@pytest.fixture
def vectoradd_on(workloads: Workloads, _pod_runs: Once, evidence):
    """``vectoradd_on(resource)``: cuda-vectoradd asking one ``resource`` (shared with the checks above)."""
    return lambda resource: vectoradd_run(workloads, _pod_runs, evidence, resource)


def vectoradd_run(workloads: Workloads, pod_runs: Once, evidence, resource: str) -> PodRun:
    """cuda-vectoradd asking one ``resource``, run once per resource per session."""
    from gpuconform.cluster.workloads import render, safe_name
    run = pod_runs.get(resource, lambda: workloads.run(render(
        "cuda-vectoradd.yaml", safe_name("cuda-vectoradd", resource), workloads.ns, workloads.images,
        limits={resource: 1})))
    evidence.add(f"pod {run.name}", run.evidence())
    return run


@pytest.fixture
def no_request_probe(cluster, workloads: Workloads, _pod_runs: Once, evidence) -> PodRun:
    """The CUDA image asking no GPU on the first GPU worker, listing what GPUs it sees; run once."""
    from gpuconform.cluster.workloads import render
    target = cluster.gpu_node_names()[0]
    run = _pod_runs.get("no-request", lambda: workloads.run(render(
        "gpu-isolation-probe.yaml", "gpu-isolation-probe", workloads.ns, workloads.images,
        node_selector={"kubernetes.io/hostname": target})))
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
