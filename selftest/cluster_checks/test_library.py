"""The cluster library's pure parts, without a cluster: Kyverno exclusion, DaemonSet placement,
pod states, profile validation of the cluster section."""
from __future__ import annotations

import pytest

from gpuconform.cluster import kyverno, nodes, operator, pods
from gpuconform.cluster.workloads import devices_seen, gpu_device_nodes, gpu_limits, safe_name

RULE = {"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"]}}]}}


def _policy(rule, namespace=None):
    md = {"name": "p", **({"namespace": namespace} if namespace else {})}
    return {"metadata": md, "spec": {"validationFailureAction": "Enforce", "rules": [rule]}}


@pytest.mark.parametrize("rule, left_alone", [
    (RULE, False),
    ({**RULE, "exclude": {"any": [{"resources": {"namespaces": ["gpu-*"]}}]}}, True),
    ({**RULE, "exclude": {"resources": {"namespaces": ["gpu-operator"]}}}, True),
    ({**RULE, "exclude": {"any": [{"resources": {"namespaceSelector": {"matchLabels": {"tier": "system"}}}}]}}, True),
    ({**RULE, "exclude": {"any": [{"resources": {"namespaces": ["kube-system"]}}]}}, False),
    ({"name": "r", "match": {"any": [{"resources": {"kinds": ["Pod"], "namespaces": ["team-*"]}}]}}, True),
])
def test_kyverno_rule_exclusion(rule, left_alone):
    got = kyverno.rules_not_excluding([_policy(rule)], "gpu-operator", {"tier": "system"})
    assert (got == []) is left_alone, got


def test_kyverno_namespaced_policy_in_the_namespace_applies():
    excluded = {**RULE, "exclude": {"any": [{"resources": {"namespaces": ["gpu-operator"]}}]}}
    assert kyverno.rules_not_excluding([_policy(excluded, "gpu-operator")], "gpu-operator", {}) == [
        "Policy/p: rule r (Enforce)"]
    assert kyverno.rules_not_excluding([_policy(RULE, "other")], "gpu-operator", {}) == []


def test_kyverno_resource_filters():
    assert kyverno.filtered_globally("[Event,*,*][*/*,gpu-operator,*][Node,*,*]", "gpu-operator")
    assert not kyverno.filtered_globally("[Event,*,*][*,kube-system,*]", "gpu-operator")


def _node(name, labels, taints=()):
    return {"metadata": {"name": name, "labels": labels}, "spec": {"taints": list(taints)}}


def test_operand_unscheduled_names_label_and_taint():
    ds = {"spec": {"template": {"spec": {"nodeSelector": {"nvidia.com/gpu.deploy.device-plugin": "true"},
                                         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                          "effect": "NoSchedule"}]}}}}
    good = _node("a", {"nvidia.com/gpu.deploy.device-plugin": "true"},
                 [{"key": "nvidia.com/gpu", "effect": "NoSchedule"},
                  {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}])
    off = _node("b", {"nvidia.com/gpu.deploy.device-plugin": "false"})
    tainted = _node("c", {"nvidia.com/gpu.deploy.device-plugin": "true"}, [{"key": "dedicated", "value": "ml",
                                                                             "effect": "NoSchedule"}])
    assert operator.operand_unscheduled(ds, [good, off, tainted]) == [
        "b: label nvidia.com/gpu.deploy.device-plugin=false (wants true)",
        "c: taint dedicated:NoSchedule not tolerated"]


def test_pod_description_and_image_pull():
    pod = {"metadata": {"name": "p"}, "spec": {"nodeName": "n"}, "status": {
        "phase": "Pending",
        "containerStatuses": [{"name": "c", "state": {"waiting": {"reason": "ErrImagePull", "message": "denied"}}}]}}
    assert pods.describe_pod(pod) == "p: Pending on n; container c waiting ErrImagePull: denied"
    assert pods.image_pull_problem(pod) == ("container c", "ErrImagePull", "denied")
    assert pods.crash_problem(pod) is None


def test_allocatable_and_quantities():
    node = {"status": {"allocatable": {"cpu": "112", "nvidia.com/gpu": "0", "nvidia.com/mig-1g.10gb": "56"}}}
    assert nodes.gpu_allocatable(node) == {"nvidia.com/mig-1g.10gb": 56}
    assert nodes.quantity("2k") == 2000


def test_pod_log_readers():
    log = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-6a2e2f6f-7e47-5e0b-acc8-21933d7252d6)\n"
           "  MIG 1g.10gb     Device  0: (UUID: MIG-67775a2d-44b9-5c31-97fe-4209d1c5b5df)\n/dev/nvidia3\n")
    assert [m["profile"] for g in devices_seen(log) for m in g["mig"]] == ["1g.10gb"]
    assert gpu_device_nodes(log) == ["/dev/nvidia3"]
    spec = {"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.10gb": "1", "cpu": "1"}}}]}
    assert gpu_limits(spec) == {"nvidia.com/mig-1g.10gb": "1"}
    assert safe_name("cuda-vectoradd", "nvidia.com/mig-1g.10gb") == "cuda-vectoradd-mig-1g-10gb"


def test_profile_cluster_section_errors_in_one_line(tmp_path):
    from gpuconform.profile import ProfileError, load
    path = tmp_path / "p.yaml"
    path.write_text("name: x\ncluster:\n  server_version: {min: latest}\n")
    with pytest.raises(ProfileError) as err:
        load(path)
    assert str(err.value).startswith(f"{path}: cluster.server_version.min: String should match pattern")
    path.write_text("name: x\ncluster:\n  gpu_workers: {mig_config: all-balanced}\n")
    with pytest.raises(ProfileError, match="cluster.gpu_workers.mig_config: unknown field \\(a typo\\?\\)"):
        load(path)


def test_transient_api_errors_are_retried_then_reported_in_one_line():
    from kubernetes.client.rest import ApiException

    from gpuconform.cluster.connect import Cluster
    from gpuconform.cluster.errors import ClusterError
    cluster = Cluster(api=None, source="test", timeout=5)
    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise ApiException(status=503, reason="Service Unavailable")
        return "ok"
    assert cluster.call("listing nodes", flaky) == "ok" and len(calls) == 3

    def forbidden():
        raise ApiException(status=403, reason="Forbidden")
    with pytest.raises(ClusterError, match="^listing pods: HTTP 403 Forbidden$"):
        cluster.call("listing pods", forbidden)
