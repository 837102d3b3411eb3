"""manifests/in-cluster/optional/aiconformance-rbac.yaml is what ``-m aiconformance`` needs beside
the base, and each of its rules is needed: with the ServiceAccount's token alone (the base and
this file applied) every AI Conformance check passes, Kubeflow Trainer's (testbed/trainer, the
real controllers) included; without a rule, the checks it names end "error" with the line naming
what they lack; the file's admission policy keeps the ServiceAccount's TrainJobs to its own
namespaces and the one its admin labelled."""
from __future__ import annotations

import contextlib

import pytest

import incluster_harness as h
from cluster_harness import by_check, profile_variant
from runner import run_suite

OPTIONAL = h.IN_CLUSTER / "optional" / "aiconformance-rbac.yaml"
#: rule label -> (-k expression, check id, param, the line's start)
REMOVALS = {
    "gpuconform-aiconformance:deviceclasses.resource.k8s.io:list": (
        "dra_support and driver", "aiconf.dra_support", "driver",
        "forbidden: needs list deviceclasses.resource.k8s.io (cluster-wide)"),
    "gpuconform-aiconformance:resourceslices.resource.k8s.io:list": (
        "dra_support and driver", "aiconf.dra_support", "driver",
        "forbidden: needs list resourceslices.resource.k8s.io (cluster-wide)"),
    "gpuconform-aiconformance:services/proxy:get": (
        "accelerator_metrics and memory", "aiconf.accelerator_metrics", "memory",
        "forbidden: needs get services/proxy (in namespace gpu-operator)"),
    "gpuconform-aiconformance:customresourcedefinitions.apiextensions.k8s.io:get": (
        "robust_controller and crd_established", "aiconf.robust_controller", "crd_established",
        "forbidden: needs get customresourcedefinitions.apiextensions.k8s.io (cluster-wide)"),
    "gpuconform-aiconformance:trainjobs.trainer.kubeflow.org:create+list+watch+delete": (
        "robust_controller and invalid_refused", "aiconf.robust_controller", "invalid_refused",
        "forbidden: needs create trainjobs.trainer.kubeflow.org (in namespace training)"),
}
ALLOWED = {"gpuconform.io/trainjobs": "allowed"}


@pytest.fixture(scope="module")
def aiconf_installed(admin, installed):
    objects = h.documents(OPTIONAL)
    for obj in objects:
        h.apply(admin, obj)
    h.wait_access(admin, True, "list", "resourceslices", "resource.k8s.io")
    yield objects
    for obj in reversed(objects):
        h.delete(admin, obj)


@pytest.fixture(scope="module")
def trainer(platform, admin):
    """Kubeflow Trainer on the bed, its TrainJobs' namespace labelled for the suite as the file says."""
    from testbed.trainer.trainer import TRAINJOB_NAMESPACE, Trainer
    installed = Trainer(platform.control_plane, platform.api).install()
    admin.request("PATCH", f"/api/v1/namespaces/{TRAINJOB_NAMESPACE}", body={"metadata": {"labels": ALLOWED}},
                  content_type="application/merge-patch+json")
    yield TRAINJOB_NAMESPACE
    installed.uninstall()


@pytest.fixture
def bed_with_exporter_and_dra(platform):
    from testbed.cluster.dcgmexporter import at_exporter_pods
    from testbed.cluster.dradriver import installed as dra_installed
    with contextlib.ExitStack() as stack:
        stack.enter_context(at_exporter_pods(platform.api))
        stack.enter_context(dra_installed(platform.api))
        yield


def _run(sa_kubeconfig, tmp_path, trainjobs: str, *args: str):
    profile = profile_variant(tmp_path / "aiconformance.yaml", {"ai_conformance": {
        "checklist": "1.35", "dra_driver": "gpu.nvidia.com",
        "kubeflow_trainer": {"installed": True, "namespace": trainjobs}}})
    proc, doc = run_suite("-m", "aiconformance", "-q", *args, f"--profile={profile}", f"--kubeconfig={sa_kubeconfig}",
                          report_dir=tmp_path / "reports", timeout=400)
    assert doc and "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc, by_check(doc)


def test_every_rule_is_proven_or_said_not_to_be():
    labels = {r.label for r in h.rules(OPTIONAL)}
    assert labels == set(REMOVALS), labels ^ set(REMOVALS)
    for rule in h.rules(OPTIONAL):
        assert rule.checks and set(rule.checks) <= h.CHECK_IDS, (rule.label, rule.checks)


def test_the_token_alone_suffices(aiconf_installed, sa_kubeconfig, trainer, bed_with_exporter_and_dra, tmp_path):
    proc, results = _run(sa_kubeconfig, tmp_path, trainer)
    not_passed = {k: (r["verdict"], r["message"]) for k, r in results.items() if r["verdict"] != "pass"}
    assert not not_passed and proc.returncode == 0, not_passed
    assert {p for (cid, p) in results if cid == "aiconf.robust_controller"} == {
        "crd_established", "invalid_refused", "valid_completes"}


def test_the_fence_keeps_trainjobs_to_allowed_namespaces(admin, aiconf_installed, sa_kubeconfig, trainer):
    """A TrainJob of the ServiceAccount in a namespace nobody labelled for it is refused (dry run)."""
    from gpuconform.cluster import aiconf
    from gpuconform.cluster.connect import connect
    from gpuconform.cluster.errors import Forbidden
    sa = connect(str(sa_kubeconfig), timeout=30)
    try:
        with pytest.raises(Forbidden) as refused:
            sa.request("POST", f"{aiconf.TRAINER}/namespaces/default/trainjobs", {"dryRun": "All"},
                       body=aiconf.trainjob("default", "fenced", "torch-distributed", {}))
        assert "gpuconform may write TrainJobs only in its own run namespaces" in str(refused.value), refused.value
        sa.request("POST", f"{aiconf.TRAINER}/namespaces/{trainer}/trainjobs", {"dryRun": "All"},
                   body=aiconf.trainjob(trainer, "allowed", "torch-distributed", {}))  # the labelled one: allowed
    finally:
        sa.close()


@pytest.mark.parametrize("label", sorted(REMOVALS))
def test_without_the_rule_the_check_says_what_it_needs(label, admin, aiconf_installed, sa_kubeconfig, trainer,
                                                       bed_with_exporter_and_dra, tmp_path):
    k, check_id, param, line = REMOVALS[label]
    rule = next(r for r in h.rules(OPTIONAL) if r.label == label)
    role = next(o for o in aiconf_installed if o["kind"] == rule.role_kind and o["metadata"]["name"] == rule.role_name)
    assert check_id in rule.checks, f"{label}'s comment does not name {check_id}"
    with h.rule_removed(admin, role, rule, line.split("needs ", 1)[1], role["metadata"].get("namespace")):
        proc, results = _run(sa_kubeconfig, tmp_path, trainer, "-k", k)
    result = results[(check_id, param)]
    assert result["verdict"] == "error" and result["message"].startswith(f"could not check: {line}"), result
    assert proc.returncode == 1
