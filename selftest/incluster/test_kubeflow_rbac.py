"""The Kubeflow side of manifests/in-cluster's RBAC, on the Kubeflow bed (its own control
plane with a Kubeflow 1.10 install's objects, real dex and oauth2-proxy): with the suite's
ServiceAccount's token alone every kubeflow check passes (sufficient), and without each rule of
kubeflow/rbac.yaml the check its comment names says ``forbidden: needs <verb> <resource>``
(minimal)."""
from __future__ import annotations

import pytest

import incluster_harness as h
from gpuconform.cluster.connect import connect
from runner import run_suite, running_kubeflow_bed

KUBEFLOW_RBAC = h.IN_CLUSTER / "kubeflow" / "rbac.yaml"
STATE_ROOT = h.REPO / ".state" / "selftest-incluster-kubeflow"

#: rule -> (-k expression, check id, param, the line's start)
REMOVALS = {
    "gpuconform-kubeflow:profiles.kubeflow.org:get": (
        "test_profile_namespace", "kubeflow.identity.profile_namespace", None,
        "forbidden: needs get profiles.kubeflow.org (cluster-wide)"),
    "gpuconform-kubeflow:clusterissuers.cert-manager.io:get": (
        "test_issuer_ready", "kubeflow.certmanager.issuer_ready", None,
        "forbidden: needs get clusterissuers.cert-manager.io (cluster-wide)"),
    "gpuconform-kubeflow:clusterrolebindings.rbac.authorization.k8s.io:list": (
        "test_cluster_admin_subjects", "kubeflow.security.cluster_admin", None,
        "forbidden: needs list clusterrolebindings.rbac.authorization.k8s.io (cluster-wide)"),
    "gpuconform-kubeflow-namespace:deployments.apps+statefulsets.apps:get": (
        "test_component_available and centraldashboard", "kubeflow.components.available", "kubeflow/centraldashboard",
        "forbidden: needs get deployments.apps (in namespace kubeflow)"),
    "gpuconform-kubeflow-namespace:ingresses.networking.k8s.io:get": (
        "test_ingress_routes", "kubeflow.ingress.routes", None,
        "forbidden: needs get ingresses.networking.k8s.io (in namespace istio-system)"),
}


@pytest.fixture(scope="module")
def kubeflow_bed():
    with running_kubeflow_bed(STATE_ROOT) as bed:
        yield bed


@pytest.fixture(scope="module")
def kf_installed(kubeflow_bed):
    """The namespace, ServiceAccount, cluster-wide RBAC and kubeflow/rbac.yaml (the bed has no
    GPU Operator namespace: its Role is not applied)."""
    admin = connect(str(kubeflow_bed.cluster.kubeconfig), timeout=30)
    objects = h.documents(h.IN_CLUSTER / "00-namespace.yaml") + [
        d for d in h.documents(h.RBAC) if d["kind"] in ("ClusterRole", "ClusterRoleBinding")] + h.documents(KUBEFLOW_RBAC)
    for obj in objects:
        h.apply(admin, obj)
    h.wait_access(admin, True, "list", "clusterrolebindings", "rbac.authorization.k8s.io")
    yield admin, objects, h.token(admin)
    admin.close()


def _run(kubeflow_bed, bearer, tmp_path, *args):
    cluster = kubeflow_bed.cluster
    kubeconfig = h.token_kubeconfig(tmp_path / "sa.kubeconfig", cluster.server, h.ca_file(cluster.kubeconfig), bearer)
    profile = kubeflow_bed.profile(tmp_path / "profile.yaml")
    proc, doc = run_suite("-m", "kubeflow", "-q", f"--profile={profile}", f"--kubeconfig={kubeconfig}", *args,
                          report_dir=tmp_path / "reports", timeout=300, env=kubeflow_bed.env)
    assert doc, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr
    return proc, {(r["check_id"], r["param"]): r for r in doc["results"]}


def test_every_kubeflow_rule_is_proven():
    rules = h.rules(KUBEFLOW_RBAC)
    assert {r.label for r in rules} == set(REMOVALS)
    for r in rules:
        assert set(r.checks) <= h.CHECK_IDS, f"{r.label} names {set(r.checks) - h.CHECK_IDS}, not check ids"
        assert REMOVALS[r.label][1] in r.checks, f"{r.label}'s comment does not name {REMOVALS[r.label][1]}"


def test_the_service_account_passes_every_kubeflow_check(kubeflow_bed, kf_installed, tmp_path):
    _, _, bearer = kf_installed
    proc, results = _run(kubeflow_bed, bearer, tmp_path)
    bad = {k: (r["verdict"], r["message"]) for k, r in results.items() if r["verdict"] != "pass"}
    assert not bad, bad
    assert len(results) >= 60 and proc.returncode == 0


@pytest.mark.parametrize("label", sorted(REMOVALS))
def test_without_the_rule_the_kubeflow_check_says_what_it_needs(label, kubeflow_bed, kf_installed, tmp_path):
    admin, objects, bearer = kf_installed
    k, check_id, param, line = REMOVALS[label]
    rule = next(r for r in h.rules(KUBEFLOW_RBAC) if r.label == label)
    role = next(o for o in objects if o["kind"] == rule.role_kind and o["metadata"]["name"] == rule.role_name)
    namespace = line.split("(in namespace ", 1)[1].rstrip(")") if "(in namespace " in line else None
    with h.rule_removed(admin, role, rule, line.split("needs ", 1)[1], namespace):
        proc, results = _run(kubeflow_bed, bearer, tmp_path, "-k", k)
    result = results[(check_id, param)]
    assert result["verdict"] == "error", (result["verdict"], result["message"])
    assert result["message"].startswith(f"could not check: {line}"), result["message"]
    assert proc.returncode == 1
