"""The report model: one record per check result, the run's fingerprint, and the verdict of it all.

These models are the JSON results file (``reports/<name>.json``); ``SCHEMA.md`` documents them
and ``results.schema.json`` is generated from them (``python -m gpuconform.report.model``).
Records travel between processes (xdist) as plain dicts: ``Record(...).model_dump()``; the run's
document in memory (``Document``) holds them whole, and the file (``Results``, v4) stores what
every result of a check shares once, in ``checks`` (``compact``). ``expand`` turns a file of any
readable schema back into the ``Document`` form, which every reader of a results file goes through.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gpuconform.layers import CHECK_LAYERS

SCHEMA_ID = "gpuconform/results/v4"
#: schemas a --baseline file may carry (v3 added drift, fabric manager and cluster GPU nodes; v4 stores
#: each check's title, rule and layer once, in ``checks``, and a result's defaults not at all)
BASELINE_SCHEMAS = ("gpuconform/results/v2", "gpuconform/results/v3", SCHEMA_ID)
#: Every verdict a check result can carry, in the order the report shows them.
VERDICTS = ("pass", "fail", "error", "skip", "blocked", "waived")
Verdict = Literal["pass", "fail", "error", "skip", "blocked", "waived"]
ACCEPTED, REJECTED = "ACCEPTED", "REJECTED"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when first used: not at a run's start


class WaiverRef(_Model):
    """The waiver that matched a failed result."""
    index: int = Field(..., description="position of the waiver in the waiver file (0-based)")
    check: str = Field(..., description="the waiver's check id pattern")
    host: str = Field(..., description="the waiver's host/node pattern")
    reason: str
    owner: str
    expires: str = Field(..., description="expiry date, YYYY-MM-DD (valid through that day)")
    status: Literal["valid", "expired"] = Field(
        ..., description="'valid': the failure is reported WAIVED; 'expired': it stays a failure")


def anchor(nodeid: str) -> str:
    """A stable HTML id for a result (node ids hold characters ids and URLs dislike)."""
    return "r-" + hashlib.sha1(nodeid.encode()).hexdigest()[:12]


class Record(_Model):
    """One check result: one check on one host (or cluster) with one parameter, whole (in memory,
    between processes, and in a v2/v3 results file)."""
    check_id: str = Field(..., description="stable check id, e.g. node.driver.version")
    param: Optional[str] = Field(None, description="the item the check was parametrized with")
    title: str
    rule: str = Field("", description="the rule, from the check's docstring")
    layer: Optional[str] = Field(None, description="node, cluster or kubeflow")
    host: Optional[str] = Field(None, description="host or node the result is about")
    verdict: Verdict
    message: str = Field("", description="expected vs actual on failure; the reason on skip/error")
    evidence: str = Field("", description="commands/API calls made and what they printed, trimmed, redacted")
    remediation: Optional[str] = Field(None, description="what to run to fix a failure")
    blocked_by: Optional[str] = Field(None, description="the lower check whose failure blocked this one")
    retries: int = Field(0, description="attempts beyond the first before the final verdict (0: clean)")
    waiver: Optional[WaiverRef] = None
    nodeid: str = Field(..., description="pytest node id of the test")
    anchor: str = Field(..., description="HTML anchor of this result's row in the report")
    duration: float = Field(..., description="seconds the test call took")


class GpuInfo(_Model):
    index: int
    name: str
    uuid: Optional[str] = None
    mig_mode: Optional[str] = None
    mig_devices: list[str] = Field([], description="MIG profiles of the GPU's MIG devices (nvidia-smi -L)")


class HostSummary(_Model):
    """What the node probe found on one host, for the fingerprint."""
    host: str
    os: Optional[str] = None
    kernel: Optional[str] = None
    gpu_model: Optional[str] = Field(None, description="GPU names, with counts when mixed")
    gpu_count: Optional[int] = None
    driver: Optional[str] = None
    fabric_manager: Optional[str] = Field(None, description="fabric manager package version(s) installed")
    mig: str = Field("unknown", description="'disabled', 'enabled: <n>x<profile>, ...', or 'unknown'")
    gpus: list[GpuInfo] = []
    error: Optional[str] = Field(None, description="why facts could not be read")


class GpuNode(_Model):
    """A Kubernetes GPU node as its labels (GPU Feature Discovery, MIG manager) describe it."""
    name: str
    gpu_product: Optional[str] = Field(None, description="label nvidia.com/gpu.product")
    gpu_count: Optional[int] = Field(None, description="label nvidia.com/gpu.count")
    mig_config: Optional[str] = Field(None, description="label nvidia.com/mig.config")
    mig_state: Optional[str] = Field(None, description="label nvidia.com/mig.config.state")
    mig_devices: Optional[list[str]] = Field(
        None, description="MIG devices of one GPU under mig_config, as the MIG catalog defines that config "
                          "(None: no MIG config, or one the catalog does not know)")


class Cluster(_Model):
    name: Optional[str] = None
    api_server_version: Optional[str] = None
    gpu_nodes: list[GpuNode] = Field([], description="GPU nodes (the profile's selector), from their labels")


class Fingerprint(_Model):
    profile: str
    profile_path: str
    profile_sha256: str
    suite_version: str
    git_commit: Optional[str] = Field(None, description="commit of the suite's checkout ('+dirty' when modified)")
    run_by: str = Field(..., description="user@host that ran the suite")
    command: str = Field(..., description="the exact command line, redacted")
    selection: Optional[str] = Field(None, description="-m / -k expressions of a partial run")
    started: str
    finished: str
    hosts: list[HostSummary] = []
    cluster: Optional[Cluster] = None
    gpu_operator_version: Optional[str] = None
    kubeflow_version: Optional[str] = None


class WaiverStatus(_Model):
    index: int
    check: str
    host: str
    reason: str
    owner: str
    expires: str
    status: Literal["valid", "expired"]
    matched: int = Field(..., description="failed results this waiver matched")


class Overall(_Model):
    word: Literal["ACCEPTED", "REJECTED"]
    reasons: list[str] = Field([], description="why REJECTED (empty when ACCEPTED)")
    partial: bool = Field(..., description="not every layer ran")


class RemediationResult(_Model):
    """A failed node check and its companion script, run by ``--remediate`` on the same host."""
    host: str
    check_id: str
    param: Optional[str] = None
    script: str = Field(..., description="the companion script in remediation/")
    mode: Literal["plan", "apply"]
    state: Literal["planned", "fixed", "fix applied", "reboot required", "fix failed"] = Field(
        ..., description="planned (dry run); fixed (the host's re-probe passes the check); fix applied "
                         "(the script succeeded, the check still fails); reboot required (with the reason); "
                         "fix failed (the script's output says why)")
    reason: str = Field("", description="why this state: the re-check's message, the reboot's reason, the error")
    fix: str = Field("", description="the fix with this host's values")
    output: str = Field("", description="what the script printed (its end), redacted")


DRIFT_FACTS = ("driver", "fabric_manager", "gpu_model", "gpu_count", "mig", "kernel", "kubernetes",
               "gpu_operator", "kubeflow")
#: what --fail-on-drift may name
DRIFT_KINDS = ("newly_failing", "newly_passing", "hosts_added", "hosts_removed", *DRIFT_FACTS)


class ResultChange(_Model):
    check_id: str
    param: Optional[str] = None
    host: Optional[str] = None
    was: Optional[str] = Field(None, description="verdict in the baseline (None: no such result there)")
    now: str = Field(..., description="verdict in this run")
    anchor: str = Field(..., description="HTML anchor of this run's result")


class FactChange(_Model):
    kind: str = Field(..., description="one of the fact kinds: " + ", ".join(DRIFT_FACTS))
    host: Optional[str] = Field(None, description="host or Kubernetes node; None for a cluster-wide fact")
    was: Optional[str] = None
    now: Optional[str] = None


class Drift(_Model):
    """What changed since the baseline run (``--baseline``)."""
    baseline: str = Field(..., description="the baseline file as given")
    baseline_started: str = Field(..., description="when the baseline run started (UTC)")
    baseline_verdict: str
    baseline_profile: str = Field("", description="the profile the baseline run judged (another than this run's only "
                                                  "with --force-baseline)")
    baseline_sha256: str = Field(..., description="sha256 of the baseline file")
    newly_failing: list[ResultChange] = Field([], description="fail or error now, not in the baseline")
    newly_passing: list[ResultChange] = Field([], description="pass now, fail or error in the baseline")
    hosts_added: list[str] = []
    hosts_removed: list[str] = []
    facts: list[FactChange] = Field([], description="platform facts that changed")
    fail_on: list[str] = Field([], description="the kinds --fail-on-drift named")
    failing: list[str] = Field([], description="kinds named by --fail-on-drift that drifted (REJECTED)")


class Check(_Model):
    """What every result of one check shares, stored once in the results file (``checks``)."""
    title: str
    rule: str = Field("", description="the rule, from the check's docstring")
    layer: Optional[str] = Field(None, description="node, cluster or kubeflow")
    test: str = Field(..., description="pytest node id of the check's test without its parameters: a result's "
                                       "nodeid that starts with '[' continues it")


class Result(_Model):
    """One check result in the file: one check on one host (or cluster) with one parameter. Its
    check's title, rule and layer are in ``checks[check_id]``. A result that is not a pass has every
    field; a pass leaves out what it shares with its check or the model's defaults (see SCHEMA.md)."""
    check_id: str = Field(..., description="stable check id, e.g. node.driver.version; the key in checks")
    param: Optional[str] = Field(..., description="the item the check was parametrized with")
    host: Optional[str] = Field(None, description="host or node the result is about; left out (by a pass only): "
                                                  "the same as param")
    verdict: Verdict
    message: str = Field("", description="expected vs actual on failure; the reason on skip/error")
    evidence: str = Field("", description="commands/API calls made and what they printed, trimmed, redacted")
    nodeid: Optional[str] = Field(None, description="pytest node id of the test; one starting with '[' continues "
                                                    "its check's test; left out (by a pass only): that test, with "
                                                    "[param] when param is set")
    duration: float = Field(..., description="seconds the test call took")
    remediation: Optional[str] = Field(None, description="what to run to fix a failure")
    blocked_by: Optional[str] = Field(None, description="the lower check whose failure blocked this one")
    retries: int = Field(0, description="attempts beyond the first before the final verdict (0: clean)")
    waiver: Optional[WaiverRef] = None
    title: Optional[str] = Field(None, description="only where it differs from its check's")
    rule: Optional[str] = Field(None, description="only where it differs from its check's")
    layer: Optional[str] = Field(None, description="only where it differs from its check's")
    anchor: Optional[str] = Field(None, description="HTML anchor of this result's row in the report; only where it "
                                                    "is not the one derived from its node id (model.anchor)")


class _Run(_Model):
    verdict: Overall
    fingerprint: Fingerprint
    counts: dict[str, int] = Field(..., description="verdict → number of results, all layers")
    layers: dict[str, dict[str, int]] = Field(..., description="layer → verdict → number of results")
    waivers: list[WaiverStatus] = []

    model_config = ConfigDict(extra="forbid", populate_by_name=True, defer_build=True)


class Results(_Run):
    """The JSON results file (v4)."""
    schema_: Literal["gpuconform/results/v4"] = Field(SCHEMA_ID, alias="schema")
    checks: dict[str, Check] = Field(..., description="check id → what all its results share")
    results: list[Result]
    remediation: list[RemediationResult] = Field(
        [], description="--remediate: each failed check with a companion script, per host (empty otherwise)")
    drift: Optional[Drift] = Field(None, description="changes since --baseline (None without it)")

    @model_validator(mode="after")
    def _checks_known(self):
        unknown = next((r.check_id for r in self.results if r.check_id not in self.checks), None)
        if unknown is not None:
            raise ValueError(f"result of check {unknown!r} not in checks")
        return self


class Document(_Run):
    """A run's results with whole records: the run's document in memory, a v2/v3 file, or any
    readable file after ``expand``."""
    schema_: Literal["gpuconform/results/v2", "gpuconform/results/v3", "gpuconform/results/v4"] = Field(
        SCHEMA_ID, alias="schema")
    results: list[Record]
    remediation: list[RemediationResult] = []
    drift: Optional[Drift] = None


_SHARED = ("title", "rule", "layer")
#: what a pass leaves out at these values
_PASS_DEFAULTS = {"message": "", "evidence": "", "remediation": None, "blocked_by": None, "retries": 0,
                  "waiver": None}


def _test_of(check: dict, param: str | None) -> str:
    """The node id a pass leaves out: its check's test, with ``[param]`` when it has one."""
    return check["test"] if param is None else f"{check['test']}[{param}]"


def compact(doc: dict) -> dict:
    """The v4 file of a ``Document`` dict: each check's title, rule, layer and test once in
    ``checks``; each result without them; a pass also without empty text, default fields, a node
    id that is its check's test with its param, and a host that is its param. Lossless:
    ``expand(compact(doc)) == doc``."""
    checks: dict[str, dict] = {}
    results = []
    for r in doc["results"]:
        base = r["nodeid"].split("[", 1)[0]
        check = checks.setdefault(r["check_id"], {**{k: r[k] for k in _SHARED}, "test": base})
        item = {k: r[k] for k in ("check_id", "param", "host", "verdict", "message", "evidence", "nodeid",
                                  "duration", "remediation", "blocked_by", "retries", "waiver")}
        item.update((k, r[k]) for k in _SHARED if r[k] != check[k])
        if r["anchor"] != anchor(r["nodeid"]):
            item["anchor"] = r["anchor"]
        if r["verdict"] == "pass":
            item = {k: v for k, v in item.items() if k not in _PASS_DEFAULTS or v != _PASS_DEFAULTS[k]}
            if r["nodeid"] == _test_of(check, r["param"]):
                del item["nodeid"]
            if r["host"] == r["param"] is not None:  # a Kubernetes node's checks: the node is the param
                del item["host"]
            elif base == check["test"] and base != r["nodeid"]:
                item["nodeid"] = r["nodeid"][len(base):]
        results.append(item)
    head = {k: v for k, v in doc.items() if k not in ("schema", "results", "remediation", "drift")}
    out = {"schema": SCHEMA_ID, **head, "checks": checks, "results": results,
           "remediation": doc.get("remediation", []), "drift": doc.get("drift")}
    Results.model_validate(out)  # the file is the documented model: a result that breaks it fails loudly here
    return out


def expand(doc: dict) -> dict:
    """A results file's document (v2, v3 or a validated v4) with whole records, as ``Document``
    describes it; v2/v3 documents are returned as they are."""
    if doc.get("schema") != SCHEMA_ID or "checks" not in doc:
        return doc
    checks = doc["checks"]
    results = []
    for r in doc["results"]:
        check = checks[r["check_id"]]
        nodeid = r.get("nodeid") or _test_of(check, r["param"])
        if nodeid.startswith("["):
            nodeid = check["test"] + nodeid
        results.append({"check_id": r["check_id"], "param": r["param"],
                        **{k: r.get(k, check[k]) for k in _SHARED}, "host": r.get("host", r["param"]), "verdict": r["verdict"],
                        "message": r.get("message", ""), "evidence": r.get("evidence", ""),
                        "remediation": r.get("remediation"), "blocked_by": r.get("blocked_by"),
                        "retries": r.get("retries", 0), "waiver": r.get("waiver"), "nodeid": nodeid,
                        "anchor": r.get("anchor") or anchor(nodeid), "duration": r["duration"]})
    return {k: v for k, v in doc.items() if k != "checks"} | {"results": results}


def read(text: str | bytes) -> dict:
    """A results file's text → its document with whole records (``expand``)."""
    return expand(json.loads(text))


def count(records: list[dict]) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """(verdict counts over all results, the same per layer) with every verdict present."""
    total = {v: 0 for v in VERDICTS}
    layers = {layer: {v: 0 for v in VERDICTS} for layer in CHECK_LAYERS}
    for r in records:
        total[r["verdict"]] += 1
        layers.setdefault(r["layer"] or "other", {v: 0 for v in VERDICTS})[r["verdict"]] += 1
    return total, layers


def overall(records: list[dict], waivers: list[dict], layers_run: set[str],
            interrupted: bool = False, drifted: tuple[str, ...] = ()) -> Overall:
    """ACCEPTED only when the run finished, results exist, nothing failed, errored or was
    blocked, every waiver is valid, and no drift kind named by --fail-on-drift drifted (``drifted``)."""
    reasons = ["the run was interrupted (Ctrl-C or SIGTERM): not every check ran"] if interrupted else []
    if not records:
        reasons.append("no check ran")
    said = {"fail": "failed", "error": "could not be checked (error)",
            # judged by nothing: a prerequisite did not pass, even one this run did not select
            "blocked": "blocked (not judged: a lower check did not pass)"}
    for verdict, words in said.items():
        n = sum(r["verdict"] == verdict for r in records)
        if n:
            reasons.append(f"{n} {words}")
    reasons += [f"waiver #{w['index'] + 1} ({w['check']} on {w['host']}) expired on {w['expires']}"
                for w in waivers if w["status"] == "expired"]
    if drifted:
        reasons.append(f"drift since the baseline (--fail-on-drift): {', '.join(drifted)}")
    return Overall(word=REJECTED if reasons else ACCEPTED, reasons=reasons,
                    partial=not set(CHECK_LAYERS) <= layers_run)


def write_schema(path: Path) -> None:
    path.write_text(json.dumps(Results.model_json_schema(by_alias=True), indent=2) + "\n")


if __name__ == "__main__":
    write_schema(Path(__file__).with_name("results.schema.json"))
