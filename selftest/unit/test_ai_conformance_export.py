"""The AI conformance export (gpuconform/aiconformance/) judged by the program's own rules.

``rules.py`` is the validation of cncf/k8s-ai-conformance scripts/validate.go (offline: no URL is
fetched, no CNCF membership looked up). It is proven on the program's data first: it accepts a
submission the program accepted (fixtures/aiconformance/v1.35/k0s/PRODUCT.yaml, cited in its
header) and refuses the program's own template (the checklist with its placeholders). Then
exports built from synthetic JSON results: a passing platform passes every rule; a platform
whose MUST check failed gets that requirement Not Implemented (whatever the profile declares),
and the rules report it for a claim of conformance."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from gpuconform.aiconformance import checklist as checklists, export, rules
from gpuconform.profile.ai_conformance import DeclaredRequirement, Product
from runner import REPO, run_suite

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "aiconformance"
CHECKLISTS = REPO / "gpuconform" / "aiconformance"

PRODUCT = Product(platform_name="Seed ML Platform", platform_version="2.3", vendor_name="Example Bank",
                  website_url="https://ml.example.com", documentation_url="https://ml.example.com/docs",
                  product_logo_url="https://ml.example.com/logo.svg", description="Bare-metal GPU Kubernetes.",
                  contact_email_address="ml@example.com",
                  k8s_conformance_url="https://github.com/cncf/k8s-conformance/tree/master/v1.36/seed")
#: what no check decides on the synthetic platform, as its profile declares it
DECLARED = {"cluster_autoscaling": DeclaredRequirement(status="Implemented", notes="cluster-autoscaler 1.36 node groups"),
            "virtualized_accelerator": DeclaredRequirement(status="N/A", notes="bare metal: no vGPU")}
#: requirements of 1.36 decided by checks in the synthetic runs: aiconf.<id>, and one suite check
BY_CHECKS = ("driver_runtime_management", "gpu_sharing", "ai_inference", "gang_scheduling", "pod_autoscaling",
             "accelerator_metrics", "ai_service_metrics", "secure_accelerator_access", "robust_controller")


def result(check_id: str, verdict: str = "pass", host: str | None = None, message: str = "") -> dict:
    return {"check_id": check_id, "param": None, "host": host, "verdict": verdict, "message": message}


def results(**override: str) -> list[dict]:
    """Every requirement of BY_CHECKS passing, plus the suite's isolation check; ``override``
    sets a check's verdict (``cluster_workload_isolation="fail"``)."""
    out = [result(f"aiconf.{rid}") for rid in BY_CHECKS] + [result("cluster.workload.isolation", host="gpu-worker-1")]
    for r in out:
        r["verdict"] = override.get(r["check_id"].replace(".", "_"), r["verdict"])
        if r["verdict"] == "fail":
            r["message"] = "a pod without GPU request on gpu-worker-1 sees: /dev/nvidia0"
    return out


def submit(folder: Path, run_results: list[dict], declared=DECLARED, version: str = "1.36") -> Path:
    """PRODUCT.yaml in ``folder`` = v<version>/<product>/ as the program lays submissions out,
    with the run's reports under reports/."""
    reports = folder / "reports"
    reports.mkdir(parents=True)
    files = [reports / "run.html", reports / "run.json", reports / "junit.xml"]
    for f in files:
        f.write_text("x")
    doc = {"fingerprint": {"started": "2026-12-04T07:00:00+00:00"}, "results": run_results}
    cl = checklists.load(version)
    product = export.product_document(doc, cl, PRODUCT.metadata(), declared, export.relative_evidence(files, folder))
    export.write(folder / "PRODUCT.yaml", product, cl, "run.json")
    return folder / "PRODUCT.yaml"


def entries(path: Path) -> dict[str, dict]:
    doc = yaml.safe_load(path.read_text())
    return {e["id"]: e for reqs in doc["spec"].values() for e in reqs}


def judge(path: Path) -> list[str]:
    """The program's way: the checklist of the vX.Y/ folder in the path."""
    return rules.problems(path, checklists.load(rules.version_from_path(path)))


# -- the program's data ----------------------------------------------------------------------------
@pytest.mark.parametrize("version", checklists.versions())
def test_each_checklist_is_cited_and_is_the_programs_format(version):
    text = (CHECKLISTS / f"AIConformance-{version}.yaml").read_text()
    head = text.split("# ---- verbatim from here ----\n")[0]
    assert "source: https://github.com/cncf/k8s-ai-conformance, docs/AIConformance-" + version + ".yaml" in head
    assert "at commit " in head
    doc = yaml.safe_load(text)
    assert doc["metadata"]["kubernetesVersion"] == f"v{version}"
    cl = checklists.load(version)
    assert len(set(cl.ids())) == len(cl.ids()) and {r.level for r in cl.requirements} <= set(checklists.LEVELS)
    assert [(r.id, r.description, r.level) for r in cl.requirements] == [
        (e["id"], e["description"], e["level"]) for reqs in doc["spec"].values() for e in reqs]


def test_the_rules_accept_a_submission_the_program_accepted():
    assert judge(FIXTURES / "v1.35" / "k0s" / "PRODUCT.yaml") == []


def test_the_rules_refuse_the_programs_own_template(tmp_path):
    """The checklist as the program hands it out: placeholders, no k8sConformanceUrl, no status."""
    path = tmp_path / "v1.36" / "template" / "PRODUCT.yaml"
    path.parent.mkdir(parents=True)
    shutil.copy(CHECKLISTS / "AIConformance-1.36.yaml", path)
    found = judge(path)
    assert "Metadata field vendorName has placeholder value: [Vendor Name]" in found
    assert "Metadata field platformName has placeholder value: [Platform Name]" in found
    assert "Missing metadata field: k8sConformanceUrl (or k8s_conformance_url)" in found
    assert "Requirement 'secure_accelerator_access' is MUST level but status is ''. It must be 'Implemented'." in found
    assert not any("gpu_sharing" in p for p in found)  # an unanswered SHOULD is left alone


# -- exports from synthetic results ------------------------------------------------------------------
def test_a_passing_platform_passes_every_rule(tmp_path):
    path = submit(tmp_path / "v1.36" / "seed", results())
    assert judge(path) == []
    got, cl = entries(path), checklists.load("1.36")
    assert [(r.id, r.description, r.level) for r in cl.requirements] == [
        (got[r.id]["id"], got[r.id]["description"], got[r.id]["level"]) for r in cl.requirements]
    assert {rid for rid, e in got.items() if e["level"] == "MUST" and e["status"] == "Implemented"} == {
        r.id for r in cl.requirements if r.level == "MUST"}
    assert got["secure_accelerator_access"]["evidence"] == ["reports/run.html", "reports/run.json", "reports/junit.xml"]
    assert "aiconf.secure_accelerator_access: 1 pass; cluster.workload.isolation: 1 pass" in got["secure_accelerator_access"]["notes"]
    assert got["virtualized_accelerator"] == {**got["virtualized_accelerator"], "status": "N/A", "notes": "bare metal: no vGPU"}
    meta = yaml.safe_load(path.read_text())["metadata"]
    assert meta["kubernetesVersion"] == "v1.36" and meta["vendorName"] == "Example Bank" and "repoUrl" not in meta


def test_a_failed_must_check_is_never_implemented_and_the_rules_say_so(tmp_path):
    """The suite's isolation check failed while the aiconf check passed, and the profile declares
    the requirement Implemented: the checks decide."""
    declared = {**DECLARED, "secure_accelerator_access": DeclaredRequirement(status="Implemented", notes="we think so")}
    path = submit(tmp_path / "v1.36" / "seed", results(cluster_workload_isolation="fail"), declared)
    entry = entries(path)["secure_accelerator_access"]
    assert entry["status"] == "Not Implemented"
    assert "the profile declares 'Implemented'; the checks decide" in entry["notes"]
    assert "cluster.workload.isolation: 1 fail (gpu-worker-1: fail: a pod without GPU request" in entry["notes"]
    assert judge(path) == ["Requirement 'secure_accelerator_access' is MUST level but status is 'Not Implemented'. "
                           "It must be 'Implemented'."]


REQ_MUST = checklists.Requirement("security", "secure_accelerator_access", "d", "MUST")
REQ_SHOULD = checklists.Requirement("accelerators", "gpu_sharing", "d", "SHOULD")
NA = DeclaredRequirement(status="N/A", notes="no MIG-capable GPU")


@pytest.mark.parametrize("req, verdicts, declared, status", [
    (REQ_MUST, ["pass", "pass"], None, "Implemented"),
    (REQ_MUST, ["pass", "fail"], None, "Not Implemented"),
    (REQ_MUST, ["pass", "error"], None, "Not Implemented"),  # could not check: not known to hold
    (REQ_MUST, ["blocked"], None, "Not Implemented"),
    (REQ_MUST, ["waived"], None, "Not Implemented"),  # a waiver accepts a failure, it is not a pass
    (REQ_MUST, ["fail"], DeclaredRequirement(status="Implemented", notes="n"), "Not Implemented"),
    (REQ_SHOULD, ["pass", "fail"], None, "Partially Implemented"),
    (REQ_SHOULD, ["fail", "error"], None, "Not Implemented"),
    (REQ_SHOULD, ["skip", "skip"], NA, "N/A"),  # skipped by the profile: its declared status
    (REQ_SHOULD, ["skip", "pass"], NA, "Implemented"),
    (REQ_MUST, [], None, "Not Implemented"),  # undecided
    (REQ_SHOULD, [], None, ""),  # undecided: the program accepts an unanswered SHOULD
], ids=lambda v: v.level if isinstance(v, checklists.Requirement) else None)
def test_status_rule(req, verdicts, declared, status):
    entry = export.decide(req, [result(f"aiconf.{req.id}", v) for v in verdicts], declared, ["r.json"], "now")
    assert entry["status"] == status
    assert entry["notes"]
    if status == "N/A":
        assert entry["notes"].startswith("no MIG-capable GPU") and entry["evidence"] == []


@pytest.mark.parametrize("change, problem", [
    (lambda d: d["spec"]["accelerators"][2].update(notes=""),
     "Notes required for 'virtualized_accelerator' when status is N/A"),
    (lambda d: d["metadata"].update(platformVersion="[Platform Version]"),
     "Metadata field platformVersion has placeholder value: [Platform Version]"),
    (lambda d: d["spec"]["security"][0].update(evidence=["file:///tmp/r.html#r-1"]),
     "Invalid evidence file for 'secure_accelerator_access': file:///tmp/r.html#r-1 (not found at"),
    (lambda d: d["spec"]["accelerators"][1].update(status="Done"), "Invalid status 'Done' for 'gpu_sharing'"),
    (lambda d: d["spec"].pop("operator"), "Missing spec category: operator"),
    (lambda d: d["spec"]["networking"].pop(0), "Missing requirement 'ai_inference' in category 'networking'"),
    (lambda d: d["metadata"].update(k8sConformanceUrl="https://github.com/cncf/k8s-conformance/blob/x"),
     "Invalid k8sConformanceUrl format: https://github.com/cncf/k8s-conformance/blob/x."),
], ids=["na-without-notes", "placeholder", "file-url-evidence", "status", "category", "requirement", "k8s-url"])
def test_the_rules_refuse_each_fault(tmp_path, change, problem):
    path = submit(tmp_path / "v1.36" / "seed", results())
    doc = yaml.safe_load(path.read_text())
    change(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    found = judge(path)
    assert len(found) == 1 and found[0].startswith(problem), found


def test_aiconformance_marker_selects_the_mapped_suite_checks(tmp_path):
    """``-m aiconformance`` runs every check mapping.py names for the profile's checklist."""
    proc, _ = run_suite("-m", "aiconformance", "--collect-only", "-q", report_dir=tmp_path / "r", timeout=120)
    ids = {line.split("::")[1].split("[")[0] for line in proc.stdout.splitlines() if "::" in line}
    assert {"test_no_gpu_without_request", "test_mig_pod_sees_one_device", "test_validations_completed",
            "test_gpu_sharing"} <= ids, proc.stdout[-2000:]
