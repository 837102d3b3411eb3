"""The RBAC of manifests/in-cluster is minimal: every rule names the checks that need it, and
without the rule such a check ends "error" (could not check) with one line naming what it
lacks, ``forbidden: needs <verb> <resource>``. (That it is sufficient, the whole cluster layer
passing with the ServiceAccount's token alone, is test_entrypoint.py's in-cluster run.)

Each case removes one rule from the applied role, waits until RBAC answers "no" for it
(SubjectAccessReview), runs the suite with a kubeconfig holding only the ServiceAccount's token
and only the checks about that rule (-k), and puts the rule back."""
from __future__ import annotations


import pytest

import incluster_harness as h
from cluster_harness import PROFILE, by_check
from runner import run_suite

CHECK_IDS = h.CHECK_IDS

#: rule (role:resources:verbs) -> (-k expression, check id, param, the line's start)
REMOVALS = {
    "gpuconform:nodes:list": (
        "test_gpu_workers_registered", "cluster.nodes.gpu_workers", None,
        "forbidden: needs list nodes (cluster-wide)"),
    "gpuconform:namespaces:get": (
        "test_operator_namespace", "cluster.operator.namespace", None,
        "forbidden: needs get namespaces (namespace gpu-operator)"),
    "gpuconform:namespaces:create+delete": (
        "test_no_gpu_without_request", "cluster.workload.isolation", None,
        "forbidden: needs create namespaces (cluster-wide)"),
    "gpuconform:serviceaccounts:list+watch": (
        "test_no_gpu_without_request", "cluster.workload.isolation", None,
        "forbidden: needs list serviceaccounts (in namespace gpuconform-"),
    "gpuconform:pods:create+get+list+watch+delete": (
        "test_no_gpu_without_request", "cluster.workload.isolation", None,
        "forbidden: needs create pods (in namespace gpuconform-"),
    "gpuconform:pods/log:get": (
        "test_no_gpu_without_request", "cluster.workload.isolation", None,
        "forbidden: needs get pods/log (in namespace gpuconform-"),
    "gpuconform:events:list+watch": (
        "test_mig_exhaustion_pending and 1g", "cluster.mig.exhaustion", "nvidia.com/mig-1g.10gb",
        "forbidden: needs list events (in namespace gpuconform-"),
    "gpuconform:clusterpolicies.nvidia.com:list": (
        "test_clusterpolicy_present", "cluster.operator.clusterpolicy_present", None,
        "forbidden: needs list clusterpolicies.nvidia.com (cluster-wide)"),
    "gpuconform-gpu-operator:configmaps:get": (
        "test_allocatable_matches_config and gpu-worker-1", "cluster.mig.allocatable", "gpu-worker-1",
        "forbidden: needs get configmaps (in namespace gpu-operator)"),
    "gpuconform-gpu-operator:daemonsets.apps:list": (
        "test_validations_completed", "cluster.operator.validation", None,
        "forbidden: needs list daemonsets.apps (in namespace gpu-operator)"),
}
#: rules for what the bed does not have (Kyverno): named checks, not exercised here
NOT_IN_THE_BED = {"gpuconform:clusterpolicies.kyverno.io:list", "gpuconform-gpu-operator:policies.kyverno.io:list"}


def test_every_rule_names_existing_checks():
    """No rule without a reason: each names at least one check, and each name is a real check id."""
    rules = h.rules()
    assert len(rules) >= 10
    for rule in rules:
        assert rule.checks, f"{rule.label}: no check named in its comment"
        unknown = [c for c in rule.checks if c not in CHECK_IDS]
        assert not unknown, f"{rule.label}: names {unknown}, not check ids of tests/"


def test_every_rule_is_proven_or_said_not_to_be():
    labels = {r.label for r in h.rules()}
    assert labels == set(REMOVALS) | NOT_IN_THE_BED, labels ^ (set(REMOVALS) | NOT_IN_THE_BED)


def test_the_token_is_not_the_admin(admin, installed, sa_token, platform, tmp_path):
    """The suite's ServiceAccount reads no secrets and writes no nodes."""
    for verb, resource in (("list", "secrets"), ("patch", "nodes"), ("delete", "pods")):
        allowed_now = h.allowed(admin, verb, resource, namespace="kube-system")
        assert allowed_now is (verb == "delete"), (verb, resource)  # pods: only for the run's namespace
    assert not h.allowed(admin, "list", "secrets")
    assert not h.allowed(admin, "get", "configmaps", namespace="kube-system")


@pytest.mark.parametrize("label", sorted(REMOVALS))
def test_without_the_rule_the_check_says_what_it_needs(label, admin, installed, sa_token, platform, tmp_path):
    k, check_id, param, line = REMOVALS[label]
    rule = next(r for r in h.rules() if r.label == label)
    assert check_id in rule.checks, f"{label}'s comment does not name {check_id}"
    role = next(o for o in installed if o["kind"] == rule.role_kind and o["metadata"]["name"] == rule.role_name)
    namespace = role["metadata"].get("namespace") or ("gpuconform-x" if "gpuconform-" in line else None)
    with h.rule_removed(admin, role, rule, line.split("needs ", 1)[1], namespace):
        kubeconfig = h.token_kubeconfig(tmp_path / "sa.kubeconfig", platform.server, h.ca_file(platform.kubeconfig),
                                        sa_token)
        proc, doc = run_suite("-m", "cluster", "-k", k, "-q", f"--profile={PROFILE}", f"--kubeconfig={kubeconfig}",
                              report_dir=tmp_path / "reports", timeout=300)
    assert doc, proc.stdout[-3000:] + proc.stderr[-2000:]
    result = by_check(doc)[(check_id, param)]
    assert result["verdict"] == "error", (result["verdict"], result["message"])
    assert result["message"].startswith(f"could not check: {line}"), result["message"]
    assert h.USER in result["message"] and "\n" not in result["message"].strip()
    assert proc.returncode == 1  # could not check: REJECTED
    assert "Traceback" not in proc.stdout + proc.stderr


def test_the_fence_keeps_writes_to_its_own_run_namespaces(admin, installed, sa_token, platform, tmp_path):
    """RBAC grants namespace and pod writes cluster-wide (the run's namespace is named at run
    time); 11-admission-policy.yaml denies the ServiceAccount every such write outside a
    gpuconform-<run id> namespace labelled managed-by=gpuconform, and allows it inside."""
    from gpuconform.cluster.connect import connect
    from gpuconform.cluster.errors import Forbidden
    kubeconfig = h.token_kubeconfig(tmp_path / "sa.kubeconfig", platform.server, h.ca_file(platform.kubeconfig),
                                    sa_token)
    sa = connect(str(kubeconfig), timeout=30)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "not-ours", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    own = {"apiVersion": "v1", "kind": "Namespace",
           "metadata": {"name": "gpuconform-fence-test", "labels": {"app.kubernetes.io/managed-by": "gpuconform"}}}
    denied = [
        lambda: sa.request("POST", "/api/v1/namespaces/default/pods", {"dryRun": "All"}, body=pod,
                           what="creating pod default/not-ours"),
        lambda: sa.request("DELETE", "/api/v1/namespaces/gpu-operator", {"dryRun": "All"},
                           what="deleting namespace gpu-operator"),
        lambda: sa.request("POST", "/api/v1/namespaces", {"dryRun": "All"},
                           body={**own, "metadata": {"name": "gpuconform-unlabelled"}},
                           what="creating namespace gpuconform-unlabelled"),
    ]
    for attempt in denied:
        with pytest.raises(Forbidden) as refused:
            attempt()
        assert "gpuconform may write only its own run namespaces" in str(refused.value), refused.value
        assert ": HTTP 403 Forbidden: " in str(refused.value), refused.value
    sa.request("POST", "/api/v1/namespaces", {"dryRun": "All"}, body=own)  # its own kind: allowed
    sa.close()
