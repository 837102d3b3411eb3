"""PRODUCT.yaml of the CNCF Kubernetes AI Conformance program, from one run's results.

Each requirement of the checklist gets its status by one rule:

* decided by checks (mapping.py: ``aiconf.<id>`` and the suite checks named for it) when at least
  one of them has a result other than skip: every such result passes → ``Implemented``; any
  fail, error (could not check), blocked or waived result → ``Not Implemented``, except a SHOULD
  of which some results pass: ``Partially Implemented``. A MUST with a failed check is never
  Implemented, and what the profile declares for it does not change that;
* otherwise, as the profile declares it (``ai_conformance.requirements.<id>``: status, notes,
  evidence): what the suite cannot decide (autoscaling, Gateway API …) or a check skipped by the
  profile;
* otherwise undecided: a MUST is ``Not Implemented``, a SHOULD keeps the checklist's empty status
  (the program accepts an unanswered SHOULD), both with notes saying so.

Evidence of a requirement decided by checks: the run's reports (HTML, JSON, JUnit) as paths
relative to the PRODUCT.yaml's folder, which the program's validator resolves as files."""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import yaml

from gpuconform import __version__
from gpuconform.aiconformance import mapping
from gpuconform.aiconformance.checklist import Checklist, Requirement

FAILING = ("fail", "error", "blocked", "waived")  # waived: the rule did not hold, a waiver accepted it
MAX_FINDING = 300  # characters of a failure's message quoted in the notes


def relative_evidence(report_files: list[Path | None], folder: Path) -> list[str]:
    """The report files that exist, as plain paths relative to ``folder`` (no file:// URL, no #fragment)."""
    return [os.path.relpath(Path(p).resolve(), folder.resolve()) for p in report_files if p and Path(p).is_file()]


def _results_by_requirement(results: list[dict], checklist: Checklist) -> dict[str, list[dict]]:
    ids, found = checklist.ids(), {}
    for result in results:
        req = mapping.requirement_of(result["check_id"], ids)
        if req is not None:
            found.setdefault(req, []).append(result)
    return found


def _summary(results: list[dict]) -> str:
    """``aiconf.x: 2 pass; cluster.workload.isolation: 1 fail (gpu-worker-1: <message>)``."""
    parts = []
    for check_id in dict.fromkeys(r["check_id"] for r in results):
        mine = [r for r in results if r["check_id"] == check_id]
        counts = Counter(r["verdict"] for r in mine)
        text = f"{check_id}: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items()))
        bad = next((r for r in mine if r["verdict"] in FAILING), None)
        if bad is not None:
            where = " ".join(x for x in (bad.get("host"), f"[{bad['param']}]" if bad.get("param") else None) if x)
            message = " ".join((bad.get("message") or "").split())[:MAX_FINDING]
            text += f" ({where + ': ' if where else ''}{bad['verdict']}: {message})"
        parts.append(text)
    return "; ".join(parts)


def decide(req: Requirement, results: list[dict], declared, evidence: list[str], run: str) -> dict:
    """The PRODUCT.yaml entry of ``req``: ``results`` are those of its checks, ``declared`` the
    profile's entry for it (or None), ``evidence`` the run's report files."""
    entry = {"id": req.id, "description": req.description, "level": req.level}
    ran = [r for r in results if r["verdict"] != "skip"]
    declared_notes = f" Platform notes: {declared.notes}" if declared is not None else ""
    if ran:
        failing = [r for r in ran if r["verdict"] in FAILING]
        if not failing:
            status = "Implemented"
        elif req.level == "SHOULD" and len(failing) < len(ran):
            status = "Partially Implemented"
        else:
            status = "Not Implemented"
        overruled = (f" (the profile declares '{declared.status}'; the checks decide)"
                     if declared is not None and declared.status != status else "")
        notes = f"Decided by gpuconform {__version__} checks, run {run}{overruled}: {_summary(results)}.{declared_notes}"
        return {**entry, "status": status, "evidence": [*evidence, *(declared.evidence if declared else ())],
                "notes": notes}
    skipped = f" Its checks were skipped: {_summary(results)}." if results else ""
    if declared is not None:
        return {**entry, "status": declared.status, "evidence": list(declared.evidence),
                "notes": declared.notes + skipped}
    notes = (f"Not decided: no gpuconform check of this requirement ran in the run of {run}, and the profile "
             f"declares no status for it (ai_conformance.requirements.{req.id}).{skipped}")
    return {**entry, "status": "Not Implemented" if req.level == "MUST" else "", "evidence": [], "notes": notes}


def product_document(doc: dict, checklist: Checklist, product: dict, declared: dict, evidence: list[str]) -> dict:
    """PRODUCT.yaml's content: ``doc`` the run's JSON results, ``product`` the metadata in the
    program's camelCase (kubernetesVersion comes from the checklist), ``declared`` the profile's
    requirement entries by id, ``evidence`` the report files relative to the PRODUCT.yaml's folder."""
    found = _results_by_requirement(doc["results"], checklist)
    run = doc["fingerprint"]["started"]
    spec: dict[str, list] = {c: [] for c in checklist.categories}
    for req in checklist.requirements:
        spec[req.category].append(decide(req, found.get(req.id, []), declared.get(req.id), evidence, run))
    return {"metadata": {"kubernetesVersion": checklist.kubernetes_version, **product}, "spec": spec}


def dumps(product: dict, checklist: Checklist, source: str) -> str:
    header = (f"# Written by gpuconform {__version__} from {source}, for the CNCF Kubernetes AI Conformance\n"
              f"# checklist {checklist.version} (AIConformance-{checklist.version}.yaml): id, description and "
              f"level verbatim.\n")
    return header + yaml.safe_dump(product, sort_keys=False, allow_unicode=True, width=1 << 16)


def write(path: Path, product: dict, checklist: Checklist, source: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.writing")
    tmp.write_text(dumps(product, checklist, source), encoding="utf-8")
    tmp.replace(path)
