"""``pytest -m aiconformance --ai-conformance=DIR`` against the cluster test bed: the run writes
DIR/PRODUCT.yaml, and the program's rules (gpuconform/aiconformance/rules.py, after
scripts/validate.go) accept it on the good bed; with a GPU leaking into a pod that asked for none,
secure_accelerator_access is Not Implemented and the rules say that a MUST is not met.

DIR is ``v1.36/<product>/``, as the program lays submissions out, with the reports under it: the
evidence paths resolve as the program's validator resolves them. The profile declares the
requirements no check of the run decides; a requirement with results is judged from them only."""
from __future__ import annotations

import yaml

from cluster_harness import PROFILE, by_check
from gpuconform.aiconformance import checklist as checklists, mapping, rules
from runner import run_suite

CHECKLIST = checklists.load("1.36")
PRODUCT = {"platform_name": "gpuconform test bed", "platform_version": "0.1.0", "vendor_name": "Example Bank",
           "website_url": "https://ml.example.com", "documentation_url": "https://ml.example.com/docs",
           "product_logo_url": "https://ml.example.com/logo.svg", "description": "The suite's simulated cluster.",
           "contact_email_address": "ml@example.com",
           "k8s_conformance_url": "https://github.com/cncf/k8s-conformance/tree/master/v1.36/bed"}
#: every MUST declared, for what no check of the run decides (a check's result always wins)
DECLARED = {r.id: {"status": "Implemented", "notes": "declared for the test bed"}
            for r in CHECKLIST.requirements if r.level == "MUST"}


def run_export(platform, profile_with, tmp_path):
    folder = tmp_path / "v1.36" / "bed"
    profile = profile_with({"ai_conformance": {"checklist": "1.36", "product": PRODUCT, "requirements": DECLARED}})
    proc, doc = run_suite("-m", "aiconformance", "-q", f"--profile={profile}", f"--kubeconfig={platform.kubeconfig}",
                          f"--ai-conformance={folder}", f"--junitxml={folder}/reports/junit.xml",
                          report_dir=folder / "reports", timeout=400)
    out = proc.stdout + proc.stderr
    assert doc and "Traceback" not in out, out[-4000:]
    path = folder / "PRODUCT.yaml"
    assert path.is_file(), out[-4000:]
    entries = {e["id"]: e for reqs in yaml.safe_load(path.read_text())["spec"].values() for e in reqs}
    return proc, doc, path, entries


def judged(doc: dict) -> dict[str, list[str]]:
    """requirement id -> the verdicts of its results in the run."""
    found: dict[str, list[str]] = {}
    for r in doc["results"]:
        req = mapping.requirement_of(r["check_id"], CHECKLIST.ids())
        if req is None:  # a requirement of another checklist (dra_support is not in 1.36): skipped saying so
            assert r["check_id"].startswith(mapping.PREFIX) and r["verdict"] == "skip", r
            assert "not a requirement of checklist 1.36" in r["message"], r
            continue
        found.setdefault(req, []).append(r["verdict"])
    return found


def test_the_good_bed_exports_a_product_yaml_the_rules_accept(platform, profile_with, tmp_path, exporter):
    exporter()
    proc, doc, path, entries = run_export(platform, profile_with, tmp_path)
    assert rules.version_from_path(path) == "1.36"
    assert rules.problems(path, CHECKLIST) == []
    assert f"{path} (checklist 1.36) passes the program's rules" in proc.stdout
    decided = judged(doc)
    assert "secure_accelerator_access" in decided  # cluster.workload.isolation, cluster.mig.one_device
    for req, verdicts in decided.items():
        if set(verdicts) == {"skip"}:
            continue
        assert set(verdicts) <= {"pass", "skip"}, (req, verdicts, by_check(doc))
        entry = entries[req]
        assert entry["status"] == "Implemented" and entry["notes"].startswith("Decided by gpuconform"), entry
        # the evidence: the run's three reports, plain paths in the folder
        assert sorted(p.rsplit(".", 1)[1] for p in entry["evidence"]) == ["html", "json", "xml"], entry
        assert all(not p.startswith(("/", "file:")) and "#" not in p and (path.parent / p).is_file()
                   for p in entry["evidence"]), entry["evidence"]


def test_a_gpu_leaking_into_pods_makes_secure_accelerator_access_not_implemented(platform, profile_with, tmp_path,
                                                                                exporter):
    """The bed's runtime shows every GPU to a pod that asked for none (as test_faults.py)."""
    from kubernetes import client

    from testbed.cluster.devices import SCENARIO_CONFIGMAP
    ns, name = SCENARIO_CONFIGMAP
    client.CoreV1Api(platform.api).create_namespaced_config_map(
        ns, {"metadata": {"name": name}, "data": {"isolation": "leak"}})
    try:
        exporter()
        proc, doc, path, entries = run_export(platform, profile_with, tmp_path)
    finally:
        platform.reset()
    assert proc.returncode == 1
    entry = entries["secure_accelerator_access"]
    assert entry["status"] == "Not Implemented", entry
    assert "cluster.workload.isolation: 1 fail (fail: a pod without GPU request on gpu-worker-1 sees" in entry["notes"]
    assert "the profile declares 'Implemented'; the checks decide" in entry["notes"]
    assert rules.problems(path, CHECKLIST) == [
        "Requirement 'secure_accelerator_access' is MUST level but status is 'Not Implemented'. It must be 'Implemented'."]
    assert "fails 1 of the program's rules" in proc.stdout
