"""Hooks: layer markers and collection, verdicts, the one point where a result becomes a record
(redacted where it is made: report/record.py). The inputs are read before (plugin/inputs.py),
the reports written after (plugin/reporting.py); the logic lives in gpuconform/report/."""
from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression  # as fixtures.py reads -m

from gpuconform import __version__
from gpuconform import safetext
from gpuconform.checks import fix_for
from gpuconform.layers import CHECK_LAYERS
from gpuconform.node import remediation
from gpuconform.plugin import inputs, keys, remediation_fixtures, reporting
from gpuconform.plugin.fixtures import host_label
from gpuconform.report import record as rec
from gpuconform.report import waivers as waivers_mod
from gpuconform.report.fingerprint import cluster_summary, host_summary

#: markers whose checks run only when -m names them
OPT_IN_MARKERS = ("disruptive", "aiconformance")
#: markers that only the checks of one layer carry: -m naming them imports no other layer's folder
LAYER_OF_MARKER = {"aiconformance": "cluster"}


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


class OneLineReports:
    """A check that could not check is reported in one line (:class:`Hooks` sets it from the
    record), so its report is built without pytest first formatting the traceback through the
    facts accessors: milliseconds each (2,000 results: 3.0 s instead of 6.9 s), minutes over the
    thousands of results of a broken cluster."""

    @staticmethod
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> pytest.TestReport | None:
        if not rec.could_not_check(call) or item.get_closest_marker("check") is None:
            return None  # pytest builds it
        sections = [(f"Captured {key} {when}", content) for when, key, content in item._report_sections]
        return pytest.TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed",
                                 str(call.excinfo.value), call.when, sections, call.duration, call.start,
                                 call.stop, user_properties=item.user_properties)


class Hooks:
    """Collection, the run's header, and the records (pytest_runtest_makereport)."""

    def __init__(self, config: pytest.Config, run_inputs: inputs.RunInputs):
        self.config = config
        self.inputs = run_inputs
        self.profile = run_inputs.profile
        self._summarized: set[str] = set()  # hosts whose summary this process already sent
        self._cluster_noted = False

    # -- collection ---------------------------------------------------------------------------
    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool | None:
        """A layer's folder is not even imported when -m can select none of its checks: a node run
        loads no Kubernetes client and no Kubeflow module (issue #27). An item of tests/<layer>/
        carries that layer's marker and no other layer's; its other markers (mig, security…) may be
        set or not, so the folder is left out only when the expression is false for every choice."""
        expr = config.option.markexpr
        parts = collection_path.parts
        if not expr or "tests" not in parts:
            return None
        below = parts[len(parts) - parts[::-1].index("tests"):]
        if not below or below[0] not in CHECK_LAYERS:
            return None
        try:
            layer, compiled = below[0], Expression.compile(expr)
        except Exception:  # noqa: BLE001 - a malformed -m is pytest's to report, as it does
            return None
        others = sorted(set(re.findall(r"[A-Za-z_][\w.-]*", expr)) - {"and", "or", "not"} - set(CHECK_LAYERS))
        for choice in itertools.product((False, True), repeat=min(len(others), 10)):
            value = dict(zip(others, choice))
            value.update({m: False for m, home in LAYER_OF_MARKER.items() if home != layer and m in value})
            if compiled.evaluate(lambda name, **_kw: name == layer if name in CHECK_LAYERS else value.get(name, True)):
                return None
        return True

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Markers mirror folders: tests/node/** is `node`, and so on. Checks of an opt-in marker
        run only when -m names it: `disruptive` ones change the platform, `aiconformance` ones
        judge the AI Conformance checklist (tests/cluster/README.md says why -m cluster leaves
        them out). (Order and xdist distribution: gpuconform/plugin/distribution.py.)"""
        marks = {layer: getattr(pytest.mark, layer) for layer in CHECK_LAYERS}
        of_file: dict[Path, list] = {}  # thousands of items (checks x hosts) share a dozen files
        for item in items:
            layers = of_file.get(item.path)
            if layers is None:
                parts = Path(str(item.path)).parts
                below = parts[parts.index("tests"):] if "tests" in parts else ()
                layers = of_file[item.path] = [marks[layer] for layer in CHECK_LAYERS if layer in below]
            for mark in layers:
                item.add_marker(mark)
        for marker in OPT_IN_MARKERS:
            if marker in (self.config.option.markexpr or ""):
                continue
            kept, dropped = [], []
            for i in items:
                (dropped if _opt_in(i, marker) else kept).append(i)
            if dropped:
                self.config.hook.pytest_deselected(items=dropped)
                items[:] = kept

    def pytest_report_header(self) -> list[str]:
        return [f"gpuconform {__version__}: profile {self.profile.name} ({self.profile.path}, "
                f"sha256 {self.profile.sha256[:12]})"]

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        if self.config.pluginmanager.get_plugin("terminalreporter") is not None:
            safetext.guard(self.config.get_terminal_writer())
        try:  # pytest-html shows pytest-metadata's environment table: mask secrets there too
            from pytest_metadata.plugin import metadata_key
        except ImportError:
            return
        rec.redact_mapping(session.config.stash.get(metadata_key, {}))

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self, excinfo) -> None:
        """Ctrl-C or SIGTERM can land on an instruction without a line number (CPython 3.11), and
        pytest's terminal reporter cannot show such a traceback entry (INTERNALERROR, exit 1):
        those entries are left out, so the run still ends as interrupted (exit 2)."""
        entries = list(_walk(excinfo.tb))
        kept = [tb for tb in entries if tb.tb_lineno is not None]
        if kept and len(kept) != len(entries):
            for a, b in zip(kept, kept[1:] + [None]):
                a.tb_next = b
            excinfo._excinfo = (excinfo.type, excinfo.value, kept[0])
            excinfo._traceback = None

    # -- running ------------------------------------------------------------------------------
    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo):
        """The one point where a result, its evidence and its facts enter the reports."""
        report: pytest.TestReport = yield
        remediator = self.config.stash.get(remediation_fixtures.REMEDIATOR, None)
        if call.when == "teardown" and remediator is not None and remediator.results:
            report.gpuconform_remediation = rec.redacted(remediator.take_results())
        final = (call.when == "call") or (call.when == "setup" and not report.passed)
        if not final and report.longrepr is None and not report.sections:
            return report  # a passed setup or teardown that shows nothing: nothing to mask, no record
        mark = item.get_closest_marker("check")
        if mark is None:
            return report
        rec.redact_report(report)
        if not final:
            return report
        facts = item.funcargs.get("node") if hasattr(item, "funcargs") else None
        companion = (remediation.companion(mark.kwargs["id"], facts, self._expected(item), rec.param_of(item))
                     if report.failed and facts is not None else None)
        fix = fix_for(mark.kwargs.get("fix"), getattr(facts, "os_family", None))
        if companion is not None:  # one fix text per rule, the check's: its companion script goes beside it
            fix = f"{fix}\ncompanion script: {companion.text()}" if fix else f"companion script: {companion.text()}"
        layer = next((m.name for m in item.iter_markers() if m.name in CHECK_LAYERS), None)
        record = rec.build(item, call, report, mark, facts, fix, layer, item.stash.get(keys.EVIDENCE, []))
        waivers_mod.apply(self.inputs.waivers, record, self.inputs.today)
        if remediator is not None:
            remediator.note(item, record, facts, companion)
        report.gpuconform_record = record
        if rec.could_not_check(call):  # one line, not a traceback through the facts accessors
            report.longrepr = record["message"]
        if facts is not None and facts.host not in self._summarized:
            self._summarized.add(facts.host)
            report.gpuconform_host = rec.redacted(host_summary(facts))
        platform = dict(item.stash.get(rec.PLATFORM, {}))
        cluster = item.funcargs.get("cluster") if hasattr(item, "funcargs") else None
        if cluster is not None and not self._cluster_noted:  # present only when the API server answered
            self._cluster_noted = True
            platform.setdefault("cluster", cluster_summary(cluster))
        if any(platform.values()):
            report.gpuconform_platform = rec.redacted({k: v for k, v in platform.items() if v})
        # JUnit writes the item's user properties as <properties>: three simple ones, never the record
        item.user_properties.extend(rec.junit_properties(record))
        reporting.html_extras(self.config, report, record)
        return report

    def _expected(self, item: pytest.Item):
        """What the profile expects of the item's host (its fixture value, or the same lookup)."""
        funcargs = getattr(item, "funcargs", None) or {}
        if funcargs.get("expected") is not None or self.profile.profile.node is None or "host" not in funcargs:
            return funcargs.get("expected")
        host = funcargs["host"]
        return self.profile.node_for(host_label(host), host.backend.get_pytest_id())

    def pytest_report_teststatus(self, report: pytest.TestReport):
        """A check that could not check in its call phase is an ERROR (E), not a FAILED rule."""
        if rec.verdict_in(report) == "error" and report.when == "call":
            return "error", "E", ("ERROR", {"red": True})
        return None


def _opt_in(item: pytest.Item, marker: str) -> bool:
    """``item`` runs only when -m names ``marker`` (OPT_IN_MARKERS). The opt-in AI Conformance
    checks are the program's own (``aiconf.<id>``): the suite's checks that also decide a
    requirement (gpuconform/aiconformance/mapping.py) carry the marker and stay in -m cluster."""
    from gpuconform.aiconformance.mapping import PREFIX
    if item.get_closest_marker(marker) is None:
        return False
    if marker != "aiconformance":
        return True
    check = item.get_closest_marker("check")
    return check is not None and str(check.kwargs.get("id", "")).startswith(PREFIX)
