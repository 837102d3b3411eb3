"""The article's first step: the platform's Kyverno leaves the GPU Operator's namespace alone
(its operands are privileged and mount host paths; a policy would block or mutate them)."""
import pytest

from gpuconform.checks import check
from gpuconform.cluster import kyverno
from gpuconform.cluster.errors import ClusterError


@check("cluster.kyverno.namespace_excluded", "Kyverno policies exclude the GPU Operator's namespace",
       fix="add the namespace to every rule's exclude (exclude: {any: [{resources: {namespaces: "
           "[gpu-operator]}}]}) or to Kyverno's resourceFilters ([*/*,gpu-operator,*] in ConfigMap kyverno/kyverno)",
       needs=["cluster.api.reachable"])
def test_kyverno_excludes_namespace(cluster, cluster_expected, excluded_namespace):
    """No Kyverno (Cluster)Policy rule applies to the namespace, unless Kyverno's resourceFilters
    filter it out globally."""
    if not cluster.kyverno_installed():
        assert not cluster_expected.kyverno.required, "Kyverno is not installed (API group kyverno.io absent)"
        pytest.skip("Kyverno is not installed (API group kyverno.io absent) and the profile does not require it "
                    "(cluster.kyverno.required: false): nothing to exclude from")
    try:
        filters = cluster.kyverno_resource_filters()
    except ClusterError:
        filters = ""  # ConfigMap unreadable with our rights: judge the policies alone
    if kyverno.filtered_globally(filters, excluded_namespace):
        return
    ns = cluster.operator_namespace_object() if excluded_namespace == cluster.operator_namespace else None
    labels = ((ns or {}).get("metadata") or {}).get("labels") or {}
    applying = kyverno.rules_not_excluding(cluster.kyverno_policies(), excluded_namespace, labels)
    assert not applying, f"Kyverno rules still apply to namespace {excluded_namespace}: " + "; ".join(applying)
