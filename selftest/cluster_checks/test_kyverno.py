"""Kyverno: absent on the bed (the check skips, see test_good_cluster); with a Kyverno
ClusterPolicy CRD and a policy that does not exclude gpu-operator the check fails naming the
rule; once the rule excludes the namespace it passes."""
from __future__ import annotations

import pytest
from kubernetes import client

from testbed.kube import ignore_not_found, wait_crds_established

# A minimal stand-in for Kyverno's CRD (written for this test): the group, kind and scope the
# check reads; the schema keeps whatever a policy holds.
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterpolicies.kyverno.io"},
    "spec": {"group": "kyverno.io", "scope": "Cluster",
             "names": {"plural": "clusterpolicies", "singular": "clusterpolicy", "kind": "ClusterPolicy",
                       "shortNames": ["cpol"]},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}
RULE = {"name": "require-team-label",
        "match": {"any": [{"resources": {"kinds": ["Pod"]}}]},
        "validate": {"message": "label team is required", "pattern": {"metadata": {"labels": {"team": "?*"}}}}}


@pytest.fixture(scope="module")
def kyverno_crd(platform):
    ext = client.ApiextensionsV1Api(platform.api)
    ext.create_custom_resource_definition(CRD)
    wait_crds_established(platform.api, [CRD["metadata"]["name"]], 30)
    yield client.CustomObjectsApi(platform.api)
    ignore_not_found(ext.delete_custom_resource_definition, CRD["metadata"]["name"])


@pytest.fixture
def kyverno(kyverno_crd):
    yield kyverno_crd
    ignore_not_found(kyverno_crd.delete_cluster_custom_object, "kyverno.io", "v1", "clusterpolicies", "require-team")


def _policy(rule: dict) -> dict:
    return {"apiVersion": "kyverno.io/v1", "kind": "ClusterPolicy", "metadata": {"name": "require-team"},
            "spec": {"validationFailureAction": "Enforce", "rules": [rule]}}


def test_policy_not_excluding_gpu_operator_fails(kyverno, run_cluster):
    kyverno.create_cluster_custom_object("kyverno.io", "v1", "clusterpolicies", _policy(RULE))
    _, results = run_cluster("-k", "test_kyverno")
    r = results[("cluster.kyverno.namespace_excluded", "gpu-operator")]
    assert r["verdict"] == "fail", r
    assert r["message"] == ("Kyverno rules still apply to namespace gpu-operator: "
                            "ClusterPolicy/require-team: rule require-team-label (Enforce)")


def test_policy_excluding_gpu_operator_passes(kyverno, run_cluster):
    rule = {**RULE, "exclude": {"any": [{"resources": {"namespaces": ["gpu-operator", "kube-*"]}}]}}
    kyverno.create_cluster_custom_object("kyverno.io", "v1", "clusterpolicies", _policy(rule))
    _, results = run_cluster("-k", "test_kyverno")
    assert results[("cluster.kyverno.namespace_excluded", "gpu-operator")]["verdict"] == "pass"
