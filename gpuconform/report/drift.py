"""Drift since the last accepted run (``--baseline=<its JSON>``): results newly failing or newly
passing, hosts and nodes added or removed, and changed platform facts.

A layer's hosts are compared only when that layer has results in both runs, and a fact only when
both runs know it (a partial run or a host whose facts could not be read is no drift). A result
is "newly failing" when it is fail or error now and was anything else (or did not exist on a
host the baseline had); "newly passing" when it passes now and failed, errored or was waived.
"""
from __future__ import annotations

import hashlib
import json

import pydantic

from gpuconform import yamlfile
from gpuconform.redact import redact
from gpuconform.layers import CHECK_LAYERS
from gpuconform.report.model import BASELINE_SCHEMAS, DRIFT_KINDS, SCHEMA_ID, Document, Results, expand

FAILING = ("fail", "error")
#: a results file of thousands of hosts with every pass's evidence stays far below this
BASELINE_MAX_BYTES = 256 << 20


class BaselineError(ValueError):
    """The --baseline file or --fail-on-drift value cannot be used (one line, exit 4)."""


#: drift kinds that fail a run only when named: a check fixed since the baseline is good news
ONLY_BY_NAME = ("newly_passing",)


def fail_on_kinds(text: str | None) -> tuple[str, ...]:
    """``--fail-on-drift=driver,hosts_removed`` (or ``all``: every kind but those only named) →
    the kinds, each one known."""
    if not text:
        return ()
    kinds = [k.strip().replace("-", "_") for k in text.split(",") if k.strip()]
    if "all" in kinds:
        named = [k for k in kinds if k in ONLY_BY_NAME]
        return tuple(k for k in DRIFT_KINDS if k not in ONLY_BY_NAME or k in named)
    unknown = [k for k in kinds if k not in DRIFT_KINDS]
    if unknown or not kinds:
        raise BaselineError(f"--fail-on-drift={text}: unknown kind {unknown[0] if unknown else '(none)'!r}; "
                            f"known: all, {', '.join(DRIFT_KINDS)}")
    return tuple(dict.fromkeys(kinds))


def load_baseline(path: str, force: bool = False, profile: str | None = None) -> tuple[dict, str]:
    """(the baseline document, sha256 of its file); BaselineError naming the file otherwise, and
    for a run that was not ACCEPTED or judged another profile than ``profile`` (a baseline is
    keyed by the profile's name) unless ``force`` (--force-baseline)."""
    try:
        data = yamlfile.read_file(path, "it", BaselineError, BASELINE_MAX_BYTES)
    except BaselineError as exc:  # "<path>: cannot read it: ...", said as every line here says it
        raise BaselineError(f"--baseline={exc}") from None
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BaselineError(f"--baseline={path}: not JSON ({exc})") from None
    except RecursionError:
        raise BaselineError(f"--baseline={path}: not JSON (nested too deeply)") from None
    schema = doc.get("schema") if isinstance(doc, dict) else None
    if schema not in BASELINE_SCHEMAS:
        raise BaselineError(f"--baseline={path}: schema {schema!r} is not a gpuconform results file "
                            f"({' or '.join(BASELINE_SCHEMAS)})")
    try:
        if schema == SCHEMA_ID:
            Results.model_validate(doc)
            doc = expand(doc)
        Document.model_validate(doc)
    except RecursionError:
        raise BaselineError(f"--baseline={path}: nested too deeply for a results file") from None
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise BaselineError(f"--baseline={path}: {where}: {err['msg']}") from None
    word = doc["verdict"]["word"]
    if word != "ACCEPTED" and not force:
        raise BaselineError(f"--baseline={path}: that run was {word}, and a baseline is the last accepted run "
                            f"(--force-baseline compares with it anyway, and the report says so)")
    judged = doc["fingerprint"]["profile"]
    if profile is not None and judged != profile and not force:
        raise BaselineError(f"--baseline={path}: that run judged profile {judged!r}, this run judges {profile!r}, and "
                            f"a baseline is the last accepted run of the same profile (--force-baseline compares "
                            f"with it anyway, and the report says so)")
    return doc, hashlib.sha256(data).hexdigest()


def _key(r: dict) -> tuple:
    return r["layer"], r["check_id"], r["param"], r["host"]


def _hosts(doc: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {layer: set() for layer in CHECK_LAYERS}
    for r in doc["results"]:
        if r.get("host") and r.get("layer") in out:
            out[r["layer"]].add(r["host"])
    return out


def _layers_ran(doc: dict) -> set[str]:
    return {r["layer"] for r in doc["results"]}


def _facts(doc: dict) -> dict[tuple[str, str | None], str]:
    """(kind, host or None) → value, for every fact the run knows."""
    f = doc["fingerprint"]
    out: dict[tuple[str, str | None], str] = {}
    for h in f.get("hosts") or []:
        if h.get("error"):
            continue
        for kind, field in (("driver", "driver"), ("fabric_manager", "fabric_manager"), ("gpu_model", "gpu_model"),
                            ("gpu_count", "gpu_count"), ("mig", "mig"), ("kernel", "kernel")):
            if h.get(field) not in (None, "", "unknown"):
                out[(kind, h["host"])] = str(h[field])
    cluster = f.get("cluster") or {}
    for n in cluster.get("gpu_nodes") or []:
        for kind, field in (("gpu_model", "gpu_product"), ("gpu_count", "gpu_count"), ("mig", "mig_config")):
            if n.get(field) is not None:
                out[(kind, n["name"])] = str(n[field])
    for kind, value in (("kubernetes", cluster.get("api_server_version")),
                        ("gpu_operator", f.get("gpu_operator_version")), ("kubeflow", f.get("kubeflow_version"))):
        if value:
            out[(kind, None)] = value
    return out


def compare(baseline: dict, doc: dict, path: str, sha256: str, fail_on: tuple[str, ...] = ()) -> dict:
    """The ``Drift`` dict of ``doc`` (this run, records and fingerprint built) against ``baseline``."""
    before = {_key(r): r["verdict"] for r in baseline["results"]}
    old_hosts, new_hosts = _hosts(baseline), _hosts(doc)
    both = _layers_ran(baseline) & _layers_ran(doc)
    failing, passing = [], []
    for r in doc["results"]:
        was = before.get(_key(r))
        known = was is not None or r["host"] is None or r["host"] in old_hosts.get(r["layer"], ())
        change = {"check_id": r["check_id"], "param": r["param"], "host": r["host"], "was": was,
                  "now": r["verdict"], "anchor": r["anchor"]}
        if r["verdict"] in FAILING and was not in FAILING and known:
            failing.append(change)
        elif r["verdict"] == "pass" and was in (*FAILING, "waived"):
            passing.append(change)
    added = sorted(h for layer in both for h in new_hosts[layer] - old_hosts[layer])
    removed = sorted(h for layer in both for h in old_hosts[layer] - new_hosts[layer])
    old_facts, new_facts = _facts(baseline), _facts(doc)
    facts = [{"kind": kind, "host": host, "was": old_facts[(kind, host)], "now": value}
             for (kind, host), value in new_facts.items()
             if (kind, host) in old_facts and old_facts[(kind, host)] != value]
    facts.sort(key=lambda c: (DRIFT_KINDS.index(c["kind"]), c["host"] or ""))
    drift = {"baseline": redact(path), "baseline_started": baseline["fingerprint"]["started"],
             "baseline_verdict": baseline["verdict"]["word"],
             "baseline_profile": baseline["fingerprint"].get("profile", ""),
             "baseline_sha256": sha256,
             "newly_failing": failing, "newly_passing": passing, "hosts_added": added, "hosts_removed": removed,
             "facts": facts, "fail_on": list(fail_on)}
    drift["failing"] = [k for k in fail_on if drifted(drift, k)]
    return drift


def drifted(drift: dict, kind: str) -> bool:
    """Whether ``kind`` (one of DRIFT_KINDS) changed."""
    if kind in ("newly_failing", "newly_passing", "hosts_added", "hosts_removed"):
        return bool(drift[kind])
    return any(c["kind"] == kind for c in drift["facts"])


def forced_notes(drift: dict, profile: str) -> list[str]:
    """What --force-baseline let through, for the terminal and the report: 'a REJECTED run as
    baseline', 'a run of profile 'other' as baseline'."""
    notes = []
    if drift["baseline_verdict"] != "ACCEPTED":
        notes.append(f"a {drift['baseline_verdict']} run as baseline")
    if drift.get("baseline_profile") and drift["baseline_profile"] != profile:
        notes.append(f"a run of profile {drift['baseline_profile']!r} as baseline")
    return notes


def options(baseline: str | None, fail_on: str | None, force: bool = False,
            profile: str | None = None) -> tuple[tuple[str, dict, str] | None, tuple[str, ...]]:
    """``--baseline``, ``--fail-on-drift`` and ``--force-baseline`` checked for a run of profile
    ``profile``: ((path, document, sha256) or None, kinds)."""
    kinds = fail_on_kinds(fail_on)
    if kinds and not baseline:
        raise BaselineError(f"--fail-on-drift={fail_on}: needs --baseline=<last accepted JSON>")
    if force and not baseline:
        raise BaselineError("--force-baseline: needs --baseline=<JSON>")
    if not baseline:
        return None, kinds
    doc, sha = load_baseline(baseline, force, profile)
    return (baseline, doc, sha), kinds
