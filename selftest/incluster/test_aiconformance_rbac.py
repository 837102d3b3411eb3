"""manifests/in-cluster/optional/aiconformance-rbac.yaml is what ``-m aiconformance`` needs beside
the base, and each of its rules is needed: with the ServiceAccount's token alone (the base and
this file applied) every AI Conformance check the bed can decide passes; without a rule, the
checks it names end "error" with the line naming what they lack. The rules for Kubeflow Trainer
are named but not exercised: the bed runs no Trainer."""
from __future__ import annotations

import contextlib

import pytest
import yaml

import incluster_harness as h
from cluster_harness import PROFILE, by_check
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
}
NOT_IN_THE_BED = {"gpuconform-aiconformance:customresourcedefinitions.apiextensions.k8s.io:get",
                  "gpuconform-aiconformance:trainjobs.trainer.kubeflow.org:create+list+watch+delete"}


@pytest.fixture(scope="module")
def aiconf_installed(admin, installed):
    objects = h.documents(OPTIONAL)
    for obj in objects:
        h.apply(admin, obj)
    h.wait_access(admin, True, "list", "resourceslices", "resource.k8s.io")
    yield objects
    for obj in reversed(objects):
        h.delete(admin, obj)


@pytest.fixture
def bed_with_exporter_and_dra(platform):
    from testbed.cluster.dcgmexporter import at_exporter_pods
    from testbed.cluster.dradriver import installed as dra_installed
    with contextlib.ExitStack() as stack:
        stack.enter_context(at_exporter_pods(platform.api))
        stack.enter_context(dra_installed(platform.api))
        yield


def _run(sa_kubeconfig, tmp_path, *args: str):
    from gpuconform.profile import _merge
    profile = tmp_path / "aiconformance.yaml"
    profile.write_text(yaml.safe_dump(_merge(yaml.safe_load(PROFILE.read_text()), {
        "ai_conformance": {"checklist": "1.35", "dra_driver": "gpu.nvidia.com"}}), sort_keys=False))
    proc, doc = run_suite("-m", "aiconformance", "-q", *args, f"--profile={profile}", f"--kubeconfig={sa_kubeconfig}",
                          report_dir=tmp_path / "reports", timeout=400)
    assert doc and "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc, by_check(doc)


def test_every_rule_is_proven_or_said_not_to_be():
    labels = {r.label for r in h.rules(OPTIONAL)}
    assert labels == set(REMOVALS) | NOT_IN_THE_BED, labels ^ (set(REMOVALS) | NOT_IN_THE_BED)
    for rule in h.rules(OPTIONAL):
        assert rule.checks and set(rule.checks) <= h.CHECK_IDS, (rule.label, rule.checks)


def test_the_token_alone_suffices(aiconf_installed, sa_kubeconfig, bed_with_exporter_and_dra, tmp_path):
    proc, results = _run(sa_kubeconfig, tmp_path)
    not_passed = {k: (r["verdict"], r["message"]) for k, r in results.items() if r["verdict"] != "pass"}
    assert set(not_passed) == {("aiconf.robust_controller", p) for p in
                               ("crd_established", "invalid_refused", "valid_completes")}, not_passed
    assert {v for v, _ in not_passed.values()} == {"skip"} and proc.returncode == 0, not_passed


@pytest.mark.parametrize("label", sorted(REMOVALS))
def test_without_the_rule_the_check_says_what_it_needs(label, admin, aiconf_installed, sa_kubeconfig,
                                                       bed_with_exporter_and_dra, tmp_path):
    k, check_id, param, line = REMOVALS[label]
    rule = next(r for r in h.rules(OPTIONAL) if r.label == label)
    role = next(o for o in aiconf_installed if o["kind"] == rule.role_kind and o["metadata"]["name"] == rule.role_name)
    assert check_id in rule.checks, f"{label}'s comment does not name {check_id}"
    with h.rule_removed(admin, role, rule, line.split("needs ", 1)[1], role["metadata"].get("namespace")):
        proc, results = _run(sa_kubeconfig, tmp_path, "-k", k)
    result = results[(check_id, param)]
    assert result["verdict"] == "error" and result["message"].startswith(f"could not check: {line}"), result
    assert proc.returncode == 1
