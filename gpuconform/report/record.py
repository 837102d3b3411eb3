"""One check result → one record: verdict, message, evidence, remediation, retries, waiver.

Also the ways a check (or a later layer's fixture) adds to its own record or to the fingerprint:

    from gpuconform.report import record_retries, note_platform
    record_retries(request.node, attempt.retry_state.attempt_number - 1)   # after a tenacity loop
    note_platform(request.node, cluster={"name": "k8s-ml-prod", "api_server_version": "v1.31.4"})
"""
from __future__ import annotations

import functools
import re

import pytest

from gpuconform.errors import CannotTell
from gpuconform.redact import redact
from gpuconform.report.model import anchor

COULD_NOT_CHECK = "could not check: "
BLOCKED = "blocked by "
_BLOCKER = re.compile(r"^blocked by (\S+)")

RETRIES = pytest.StashKey[int]()
PLATFORM = pytest.StashKey[dict]()


def record_retries(node: pytest.Item, retries: int) -> None:
    """Say that the check under ``node`` reached its verdict after ``retries`` retries."""
    node.stash[RETRIES] = int(retries)


PLATFORM_FIELDS = ("cluster", "gpu_operator_version", "kubeflow_version")


def note_platform(node: pytest.Item, **fields) -> None:
    """Add fingerprint fields found by a check: ``cluster={name, api_server_version}``,
    ``gpu_operator_version``, ``kubeflow_version``."""
    unknown = sorted(set(fields) - set(PLATFORM_FIELDS))
    if unknown:
        raise TypeError(f"note_platform: unknown field(s) {unknown}; known: {list(PLATFORM_FIELDS)}")
    node.stash.setdefault(PLATFORM, {}).update(fields)


def could_not_check(call: pytest.CallInfo) -> bool:
    """The check (or a fixture it needs) raised :class:`CannotTell`: the rule was not checked."""
    return call.excinfo is not None and isinstance(call.excinfo.value, CannotTell)


def verdict_of(report: pytest.TestReport, call: pytest.CallInfo, reason: str) -> str:
    """The typed outcome of a result. Only the profile skips ("the rule does not apply") and
    "blocked by" skips are pytest skips; "could not check" is an error whichever phase raised it."""
    if report.passed:
        return "pass"
    if report.skipped:
        return "blocked" if reason.startswith(BLOCKED) else "skip"
    if could_not_check(call) or report.when != "call":
        return "error"
    return "fail"


def message_of(call: pytest.CallInfo) -> str:
    if call.excinfo is None:
        return ""
    exc = call.excinfo.value
    if isinstance(exc, pytest.skip.Exception):
        return str(exc.msg)
    if isinstance(exc, CannotTell):
        return COULD_NOT_CHECK + str(exc).strip()
    text = str(exc).strip()
    if isinstance(exc, AssertionError):
        text = text.split("\nassert ")[0]
        return text or "assertion failed"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def param_of(item: pytest.Item) -> str | None:
    """The item's parameter as text (as given: the record redacts it with everything else)."""
    callspec = getattr(item, "callspec", None)
    return next((str(v) for k, v in (callspec.params.items() if callspec else ())
                 if not k.startswith("_") and type(v).__name__ != "NotSetType"), None)  # empty param set


#: The argument a node check is parametrized by, behind the ``host`` fixture (plugin/hosts.py).
HOST_PARAM = "_gpuconform_host"
#: A cluster check parametrized by this argument is about that Kubernetes node: its host.
NODE_PARAM = "gpu_node"


def host_of(item: pytest.Item, facts) -> str | None:
    host = getattr(facts, "host", None)
    params = getattr(getattr(item, "callspec", None), "params", {})
    if host is None and HOST_PARAM in params:
        host = params[HOST_PARAM].backend.get_hostname()
    if host is None and NODE_PARAM in params:
        host = str(params[NODE_PARAM])
    return host


def build(item: pytest.Item, call: pytest.CallInfo, report: pytest.TestReport, mark, facts,
          fix_text, layer: str | None, added_evidence: list[str] = ()) -> dict:
    """The record of a final report (call, or a setup that did not pass), redacted: every string
    in it, whichever field holds it, goes through :func:`redacted` here, the one boundary between
    what a check saw and the reports (JSON, HTML, JUnit's properties, the terminal's one line).
    ``added_evidence``: what the check itself recorded (the cluster layer's ``evidence`` fixture)."""
    message = message_of(call)
    verdict = verdict_of(report, call, message)
    parts = []
    if facts is not None and verdict in ("pass", "fail", "error"):
        parts.append(facts.evidence(*mark.kwargs.get("evidence", ())))
    parts += list(added_evidence)
    evidence = "\n\n".join(p for p in parts if p)
    blocker = _BLOCKER.match(message) if verdict == "blocked" else None
    return redacted({
        "check_id": mark.kwargs["id"], "param": param_of(item), "title": mark.kwargs["title"],
        "rule": (item.function.__doc__ or "").strip() if hasattr(item, "function") else "",
        "layer": layer, "host": host_of(item, facts), "verdict": verdict, "message": message,
        "evidence": evidence, "remediation": fix_text if verdict == "fail" and fix_text else None,
        "blocked_by": blocker.group(1) if blocker else None,
        "retries": item.stash.get(RETRIES, 0), "waiver": None, "nodeid": item.nodeid,
        "anchor": anchor(item.nodeid), "duration": round(report.duration, 3)})


def verdict_in(report: pytest.TestReport) -> str | None:
    """The verdict a (possibly remote, xdist) test report carries, None when it has no record."""
    record = getattr(report, "gpuconform_record", None)
    return record["verdict"] if record else None


def junit_properties(record: dict) -> list[tuple[str, str]]:
    """What CI dashboards read from JUnit: check id (with its param), host, verdict."""
    check_id = record["check_id"] + (f"[{record['param']}]" if record["param"] is not None else "")
    return [("check_id", check_id), ("host", record["host"] or ""), ("verdict", record["verdict"])]


def redact_report(report: pytest.TestReport) -> None:
    """Mask secrets in what pytest itself shows of a result (traceback, skip reason, captured
    output): the terminal, pytest-html's log and JUnit's failure text read these."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        report.longrepr = (longrepr[0], longrepr[1], redact(str(longrepr[2])))
    elif longrepr is not None:
        text = str(longrepr)
        masked = redact(text)
        if masked != text:
            report.longrepr = masked
    report.sections = [(title, redact(content)) for title, content in report.sections]


#: Distinct texts remembered by :func:`redacted`: the same title, rule, host or section of a host's
#: evidence recurs across thousands of records and is masked once.
_REMEMBERED = 1 << 14


@functools.lru_cache(maxsize=_REMEMBERED)
def _masked(text: str) -> str:
    return redact(text)


def redacted(value):
    """``value`` with every string inside it (dicts and lists, at any depth) through ``redact``:
    what a record, a host summary, the platform fields and remediation results are made of
    before a test report carries them to the reports."""
    if isinstance(value, str):
        return _masked(value)
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redacted(v) for v in value]
    return value


def redact_mapping(mapping: dict) -> None:
    """Mask secret values of a mapping in place, judging each value with its key beside it."""
    for key, value in list(mapping.items()):
        if isinstance(value, str):
            masked = redact(f"{key}={value}")
            mapping[key] = masked[len(key) + 1:] if masked.startswith(f"{key}=") else redact(value)
        else:
            mapping[key] = redacted(value)
