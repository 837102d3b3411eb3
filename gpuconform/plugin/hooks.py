"""Hooks: profile loading, layer markers, verdicts, evidence (redacted at one point), reports."""
from __future__ import annotations

import datetime as dt
import getpass
import json
import os
import socket
import sys
from pathlib import Path

import pytest

from gpuconform import __version__
from gpuconform import profile as profile_mod
from gpuconform.checks import fix_for
from gpuconform.node.facts import CannotTell, Unavailable
from gpuconform.plugin import keys
from gpuconform.redact import redact

LAYERS = ("node", "cluster", "kubeflow")
COULD_NOT_CHECK = "could not check: "
BLOCKED = "blocked by "


def verdict_of(report: pytest.TestReport, reason: str) -> str:
    if report.passed:
        return "pass"
    if report.skipped:
        if reason.startswith(BLOCKED):
            return "blocked"
        if reason.startswith(COULD_NOT_CHECK):
            return "error"
        return "skip"
    return "fail" if report.when == "call" else "error"


def _message(call: pytest.CallInfo) -> str:
    if call.excinfo is None:
        return ""
    exc = call.excinfo.value
    if isinstance(exc, pytest.skip.Exception):
        return str(exc.msg)
    text = str(exc).strip()
    if isinstance(exc, AssertionError):
        text = text.split("\nassert ")[0]
        return text or "assertion failed"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class Hooks:
    def __init__(self, config: pytest.Config):
        self.config = config
        self.records: list[dict] = []
        self.started = dt.datetime.now(dt.timezone.utc)
        path = config.option.gpuconform_profile or str(Path(config.rootpath, "profiles", "seed-h100.yaml"))
        try:
            self.profile = profile_mod.load(path)
        except profile_mod.ProfileError as exc:
            raise pytest.UsageError(str(exc)) from None
        config.stash[keys.PROFILE] = self.profile
        if not getattr(config.option, "hosts", None) and self.profile.profile.hosts:
            config.option.hosts = ",".join(self.profile.profile.hosts)
        self.json_path = None
        if not config.option.gpuconform_no_reports and not hasattr(config, "workerinput"):
            self._plan_reports()

    def _plan_reports(self) -> None:
        opt = self.config.option
        folder = Path(opt.gpuconform_report_dir or Path(self.config.rootpath, "reports"))
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        name = opt.gpuconform_report_name or f"{self.profile.name}-{stamp}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise pytest.UsageError(f"--report-dir {folder}: cannot create: {exc.strerror}") from None
        self.json_path = folder / f"{name}.json"
        if getattr(opt, "htmlpath", None) is None and hasattr(opt, "self_contained_html"):
            opt.htmlpath = str(folder / f"{name}.html")
            opt.self_contained_html = True

    # -- collection ---------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Markers mirror folders: tests/node/** is `node`, and so on. Checks marked
        `disruptive` change the platform: they run only when -m names them."""
        for item in items:
            parts = Path(str(item.path)).parts
            for layer in LAYERS:
                if "tests" in parts and layer in parts[parts.index("tests"):]:
                    item.add_marker(layer)
        if "disruptive" not in (self.config.option.markexpr or ""):
            dropped = [i for i in items if i.get_closest_marker("disruptive") is not None]
            if dropped:
                self.config.hook.pytest_deselected(items=dropped)
                items[:] = [i for i in items if i.get_closest_marker("disruptive") is None]

    def pytest_report_header(self) -> list[str]:
        return [f"gpuconform {__version__}: profile {self.profile.name} ({self.profile.path}, "
                f"sha256 {self.profile.sha256[:12]})"]

    # -- running ------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function):
        try:
            return (yield)
        except Unavailable as exc:
            pytest.skip(str(exc))
        except CannotTell as exc:
            pytest.skip(COULD_NOT_CHECK + str(exc))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        report: pytest.TestReport = yield
        mark = item.get_closest_marker("check")
        final = (call.when == "call") or (call.when == "setup" and not report.passed)
        if mark is None or not final:
            return report
        facts = item.funcargs.get("node") if hasattr(item, "funcargs") else None
        message = redact(_message(call))
        verdict = verdict_of(report, message)
        callspec = getattr(item, "callspec", None)
        param = next((str(v) for k, v in (callspec.params.items() if callspec else ())
                      if not k.startswith("_")), None)
        host = getattr(facts, "host", None)
        if host is None and callspec and "_testinfra_host" in callspec.params:
            host = callspec.params["_testinfra_host"].backend.get_hostname()
        evidence = ""
        if facts is not None and verdict in ("pass", "fail", "error"):
            evidence = redact(facts.evidence(*mark.kwargs.get("evidence", ())))
        fix = fix_for(mark.kwargs.get("fix"), getattr(facts, "os_family", None)) if verdict == "fail" else None
        layer = next((m.name for m in item.iter_markers() if m.name in LAYERS), None)
        record = {"check_id": mark.kwargs["id"], "param": param, "title": mark.kwargs["title"],
                  "rule": (item.function.__doc__ or "").strip() if hasattr(item, "function") else "",
                  "layer": layer, "host": host, "verdict": verdict, "message": message,
                  "evidence": evidence, "remediation": fix, "nodeid": item.nodeid,
                  "duration": round(report.duration, 3)}
        report.user_properties.append(("gpuconform", record))
        self._html_extras(item, report, record)
        return report

    def _html_extras(self, item, report, record) -> None:
        html = self.config.pluginmanager.getplugin("html")
        if html is None:
            return
        extras = getattr(report, "extras", [])
        head = f"[{record['verdict'].upper()}] {record['check_id']}: {record['title']}"
        if record["message"]:
            head += f"\n{record['message']}"
        if record["remediation"]:
            head += f"\n\nHow to fix:\n{record['remediation']}"
        extras.append(html.extras.text(head, name="verdict"))
        if record["evidence"]:
            extras.append(html.extras.text(record["evidence"], name="evidence"))
        report.extras = extras

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        for key, value in report.user_properties:
            if key == "gpuconform":
                self.records.append(value)

    # -- reports ------------------------------------------------------------------------------
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.json_path is None:
            return
        counts: dict[str, int] = {}
        for r in self.records:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        doc = {
            "schema": "gpuconform/results/v1",
            "fingerprint": {
                "profile": self.profile.name, "profile_path": self.profile.path,
                "profile_sha256": self.profile.sha256, "suite_version": __version__,
                "run_by": f"{getpass.getuser()}@{socket.gethostname()}",
                "command": redact(" ".join([os.path.basename(sys.argv[0])] + sys.argv[1:])),
                "started": self.started.isoformat(timespec="seconds"),
                "finished": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            },
            "counts": counts,
            "results": self.records,
        }
        self.json_path.write_text(json.dumps(doc, indent=2) + "\n")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.json_path is not None and self.json_path.exists():
            terminalreporter.write_line(f"gpuconform: JSON results: {self.json_path}")
