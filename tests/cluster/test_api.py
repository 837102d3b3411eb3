"""The API server answers, runs a Kubernetes release in the profile's range, and the GPU
workers are there and Ready."""
from gpuconform.checks import check
from gpuconform.cluster import nodes


@check("cluster.api.reachable", "The API server answers with the configured credentials",
       fix="check --kubeconfig/--context (or KUBECONFIG), that the API server address is reachable "
           "from where the suite runs, and that the credentials are valid (kubectl get --raw /version)")
def test_api_reachable(cluster_session):
    """GET /version succeeds within cluster.timeouts.api_s using the kubeconfig, context or in-cluster config."""
    why = cluster_session.unreachable
    assert why is None, why


@check("cluster.api.version", "Kubernetes version is within the profile's range",
       fix="upgrade the cluster, or widen cluster.server_version in the profile if the GPU Operator release supports it",
       needs=["cluster.api.reachable"])
def test_server_version(cluster, cluster_expected):
    """The server's gitVersion lies in cluster.server_version (min/max minor, inclusive)."""
    got = cluster.version()["gitVersion"]
    want = cluster_expected.server_version
    assert want.accepts(got), f"Kubernetes {got}, expected {want}"


@check("cluster.nodes.gpu_workers", "The profile's GPU workers are registered",
       fix="join the GPU workers, or correct cluster.gpu_workers.selector / min_count in the profile",
       needs=["cluster.api.reachable"])
def test_gpu_workers_registered(cluster, cluster_expected):
    """At least cluster.gpu_workers.min_count nodes match cluster.gpu_workers.selector."""
    want = cluster_expected.gpu_workers
    names = cluster.gpu_node_names()
    assert len(names) >= want.min_count, (f"{len(names)} node(s) match {want.selector} "
                                          f"({', '.join(names) or 'none'}), expected at least {want.min_count}")


@check("cluster.nodes.ready", "Every GPU worker is Ready",
       fix="look at the kubelet on the node (journalctl -u kubelet) and the node's conditions (kubectl describe node)",
       needs=["cluster.api.reachable"])
def test_gpu_workers_ready(cluster, cluster_expected):
    """The Ready condition of every node matching cluster.gpu_workers.selector is True."""
    not_ready = [f"{nodes.name(n)}: {nodes.describe_ready(n)}" for n in cluster.gpu_nodes() if not nodes.is_ready(n)]
    assert not not_ready, "; ".join(not_ready)
