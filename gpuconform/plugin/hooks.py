"""Hooks: profile and waiver loading, layer markers, verdicts, evidence (redacted at one point),
and the reports (JSON here, HTML through pytest-html's hooks, JUnit through user properties).
The logic lives in gpuconform/report/; this file wires it to pytest."""
from __future__ import annotations

import hashlib
import itertools
import os
import re
import signal
import threading
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression  # as fixtures.py reads -m

from gpuconform import __version__
from gpuconform import profile as profile_mod
from gpuconform import safetext
from gpuconform.checks import fix_for
from gpuconform.layers import CHECK_LAYERS
from gpuconform.node import remediation
from gpuconform.plugin import inputs, keys, remediation_fixtures
from gpuconform.plugin.fixtures import host_label
from gpuconform.report import drift as drift_mod
from gpuconform.report import html as report_html
from gpuconform.report import junit
from gpuconform.report import record as rec
from gpuconform.report import terminal
from gpuconform.report import waivers as waivers_mod
from gpuconform.report.fingerprint import cluster_summary, host_summary
from gpuconform.report.run import RunReport

#: markers whose checks run only when -m names them
OPT_IN_MARKERS = ("disruptive", "aiconformance")
#: markers that only the checks of one layer carry: -m naming them imports no other layer's folder
LAYER_OF_MARKER = {"aiconformance": "cluster"}

CSS = Path(__file__).resolve().parent.parent / "report" / "report.css"


def _chroot_paths(config: pytest.Config) -> None:
    """Let ``chroot:///abs/root`` name a chroot host: testinfra reads the URL's (empty) host part,
    so such hosts become paths under ``--connection=chroot``."""
    specs = (getattr(config.option, "hosts", None) or "").split(",")
    roots = [s for s in specs if s.startswith("chroot:///")]
    if not roots:
        return
    if len(roots) != len(specs):
        raise pytest.UsageError("--hosts: chroot:///PATH hosts cannot be mixed with other kinds in one run")
    config.option.hosts = ",".join(s[len("chroot://"):] for s in roots)
    config.option.connection = "chroot"


def _walk(tb):
    while tb is not None:
        yield tb
        tb = tb.tb_next


def _interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def _html_reports(config: pytest.Config) -> list:
    """pytest-html's report writers (none with -p no:html)."""
    try:
        from pytest_html.basereport import BaseReport
    except ImportError:
        return []
    return [p for p in config.pluginmanager.get_plugins() if isinstance(p, BaseReport) and hasattr(p, "_report_path")]


def _move_html_report(config: pytest.Config, path: Path) -> None:
    """pytest-html fixes its output path when it is configured; a report folder that refuses the
    files at the end moves it (pytest-html has no public way to)."""
    for plugin in _html_reports(config):
        plugin._report_path = path


#: A report's file name at most this many bytes before its suffix: a long profile name is cut and
#: keeps a hash of itself (a name over 255 bytes is refused by the file system, fallback included).
NAME_BYTES = 120


def _file_name(name: str) -> str:
    if len(name.encode()) <= NAME_BYTES:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:12]
    return name.encode()[:NAME_BYTES - 13].decode(errors="ignore") + "-" + digest


def _junit_reachable(config: pytest.Config) -> str | None:
    """Before junitxml writes: a JUnit path that refuses the file (``--junitxml=/proc/x.xml``, a
    folder, a full disk) would stop the run's other reports with a traceback; the file goes to a
    folder of its own instead, and the line returned says where."""
    from _pytest.junitxml import xml_key
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return None
    wanted = Path(xml.logfile)
    try:
        wanted.parent.mkdir(parents=True, exist_ok=True)
        with wanted.open("a", encoding="utf-8"):
            return None
    except OSError as exc:
        xml.logfile = str(inputs.fallback_dir() / "junit.xml")
        return (f"gpuconform: could not write the JUnit report {wanted} ({exc.strerror or exc}); "
                f"it is {xml.logfile}")


class ReportFiles:
    """Around the writing of the reports (JSON: :class:`Hooks`, HTML: pytest-html, JUnit: pytest's
    junitxml): before, a JUnit path that refuses the file is replaced, so that its failure cannot
    stop the others; after, the page gets the Content-Security-Policy that lets only its own
    scripts run (report/html.py ``seal``)."""

    def __init__(self, config: pytest.Config):
        self.config = config
        self.junit_note: str | None = None

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session):
        self.junit_note = _junit_reachable(self.config)
        result = yield
        for plugin in _html_reports(self.config):
            path = Path(plugin._report_path)
            if path.is_file():
                page = report_html.seal(path.read_text(encoding="utf-8"), (_pytest_html_script(),))
                tmp = path.with_name(f".{path.name}.sealing")
                tmp.write_text(page, encoding="utf-8")
                tmp.replace(path)
        return result

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.junit_note:
            terminalreporter.write_line(self.junit_note, red=True)


def _pytest_html_script() -> str:
    """pytest-html's own page script (its app.js), the other script the page may run."""
    from importlib.resources import files
    return files("pytest_html").joinpath("resources", "app.js").read_text(encoding="utf-8")


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
    def __init__(self, config: pytest.Config, suite: Path):
        """Every input is checked here, once, before anything runs (one line, exit 4)."""
        self.config = config
        self.suite = suite
        opt = config.option
        path = inputs.profile_path(opt.gpuconform_profile, str(Path(suite, "profiles", "seed-h100.yaml")))
        try:
            self.profile = profile_mod.load(path)
            self.waivers = waivers_mod.load(opt.gpuconform_waivers) if opt.gpuconform_waivers else ()
            baseline, fail_on_drift = drift_mod.options(opt.gpuconform_baseline, opt.gpuconform_fail_on_drift,
                                                        opt.gpuconform_force_baseline, self.profile.name)
        except (profile_mod.ProfileError, waivers_mod.WaiverError, drift_mod.BaselineError) as exc:
            raise pytest.UsageError(str(exc)) from None
        inputs.kubeconfig(opt.gpuconform_kubeconfig, opt.gpuconform_context, os.environ.get("KUBECONFIG"))
        inputs.files({"--ssh-config": getattr(opt, "ssh_config", None),
                      "--ssh-identity-file": getattr(opt, "ssh_identity_file", None)})
        self.today = waivers_mod.today_utc()
        config.stash[keys.PROFILE] = self.profile
        wanted = remediation_fixtures.selection(opt.gpuconform_remediate, opt.gpuconform_remediate_checks)
        if wanted is not None:
            config.stash[remediation_fixtures.REMEDIATOR] = remediation_fixtures.Remediator(
                opt.gpuconform_remediate, wanted)
        where = "--hosts"
        if getattr(opt, "hosts", None) is None and self.profile.profile.hosts:
            opt.hosts, where = ",".join(self.profile.profile.hosts), f"{self.profile.path}: hosts:"
        _chroot_paths(config)
        if getattr(opt, "hosts", None) is not None:
            opt.hosts = inputs.host_specs(opt.hosts, getattr(opt, "connection", None), where,
                                          self.profile.profile.timeouts.ssh_connect_s)
            if "k8s-node://?" in opt.hosts:  # label selectors: one host per node the API server lists
                from gpuconform.node import k8s_node
                from gpuconform.plugin import k8s_node_fixtures
                opt.hosts = k8s_node.expand_selectors(opt.hosts, k8s_node_fixtures.connector(config))
        self._summarized: set[str] = set()  # hosts whose summary this process already sent
        self._cluster_noted = False
        self._unlisted: set[str] = set()  # results the HTML table leaves out (clean passes)
        self.run: RunReport | None = None
        self.json_path = None
        # the verdict (and so the exit code) is drawn on the controller even with --no-reports
        if not (opt.collectonly or hasattr(config, "workerinput")):
            selection = " ".join(f"{flag} {val!r}" for flag, val in (("-m", opt.markexpr), ("-k", opt.keyword)) if val)
            self.run = RunReport(self.profile, self.waivers, suite,
                                 tuple(config.invocation_params.args), selection or None, self.today,
                                 baseline, fail_on_drift)
            if not opt.gpuconform_no_reports:
                self._plan_reports()

    def _plan_reports(self) -> None:
        opt = self.config.option
        stamp = self.run.started.strftime("%Y%m%dT%H%M%SZ")
        if opt.gpuconform_report_name is not None:
            name = inputs.report_name(opt.gpuconform_report_name)
        else:  # the profile's name is free text: keep it a file name
            name = _file_name(re.sub(r"[^A-Za-z0-9_.-]+", "_", self.profile.name).lstrip(".")) + f"-{stamp}"
        # default: ./reports, where the run is started (in a checkout its root; never into an installed package)
        folder = inputs.report_dir(Path(opt.gpuconform_report_dir or Path(self.config.invocation_params.dir, "reports")))
        self._place_reports(folder, name)

    def _place_reports(self, folder: Path, name: str) -> None:
        opt = self.config.option
        self.json_path = folder / f"{name}.json"
        if hasattr(opt, "self_contained_html") and (getattr(opt, "htmlpath", None) is None or
                                                    getattr(self, "_html_ours", False)):
            opt.htmlpath = str(folder / f"{name}.html")
            opt.self_contained_html = True
            self._html_ours = True
        if getattr(opt, "htmlpath", None) and isinstance(getattr(opt, "css", None), list):
            opt.css.append(str(CSS))

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
        # SIGTERM ends the run as Ctrl-C does: probes ended, cleanup run, report of what finished written
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _interrupt)
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
            report.gpuconform_remediation = remediator.take_results()  # redacted by the remediator
        mark = item.get_closest_marker("check")
        if mark is None:
            return report
        rec.redact_report(report)
        final = (call.when == "call") or (call.when == "setup" and not report.passed)
        if not final:
            return report
        facts = item.funcargs.get("node") if hasattr(item, "funcargs") else None
        companion = (remediation.companion(mark.kwargs["id"], facts, self._expected(item), rec.param_of(item))
                     if report.failed and facts is not None else None)
        fix = companion.text() if companion else fix_for(mark.kwargs.get("fix"), getattr(facts, "os_family", None))
        layer = next((m.name for m in item.iter_markers() if m.name in CHECK_LAYERS), None)
        record = rec.build(item, call, report, mark, facts, fix, layer, item.stash.get(keys.EVIDENCE, []))
        waivers_mod.apply(self.waivers, record, self.today)
        if remediator is not None:
            remediator.note(item, record, facts, companion)
        report.gpuconform_record = record
        if rec.could_not_check(call):  # one line, not a traceback through the facts accessors
            report.longrepr = record["message"]
        if facts is not None and facts.host not in self._summarized:
            self._summarized.add(facts.host)
            report.gpuconform_host = rec.redact_obj(host_summary(facts))
        platform = dict(item.stash.get(rec.PLATFORM, {}))
        cluster = item.funcargs.get("cluster") if hasattr(item, "funcargs") else None
        if cluster is not None and not self._cluster_noted:  # present only when the API server answered
            self._cluster_noted = True
            platform.setdefault("cluster", cluster_summary(cluster))
        if any(platform.values()):
            report.gpuconform_platform = rec.redact_obj({k: v for k, v in platform.items() if v})
        # JUnit writes the item's user properties as <properties>: three simple ones, never the record
        item.user_properties.extend(rec.junit_properties(record))
        self._html_extras(report, record)
        return report

    def _expected(self, item: pytest.Item):
        """What the profile expects of the item's host (its fixture value, or the same lookup)."""
        funcargs = getattr(item, "funcargs", None) or {}
        if funcargs.get("expected") is not None or self.profile.profile.node is None or "host" not in funcargs:
            return funcargs.get("expected")
        host = funcargs["host"]
        return self.profile.node_for(host_label(host), host.backend.get_pytest_id())

    def _html_extras(self, report: pytest.TestReport, record: dict) -> None:
        html = self.config.pluginmanager.getplugin("html")
        if html is None:
            return
        if report_html.listed(record):  # passes are in the matrix and the JSON, not the results table
            report.extras = [*getattr(report, "extras", []), html.extras.html(report_html.detail(record))]

    def pytest_report_teststatus(self, report: pytest.TestReport):
        """A check that could not check in its call phase is an ERROR (E), not a FAILED rule."""
        if rec.verdict_in(report) == "error" and report.when == "call":
            return "error", "E", ("ERROR", {"red": True})
        return None

    @pytest.hookimpl(trylast=True)  # after pytest's junitxml has written the testcase
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        junit.error_not_failure(self.config, report)
        if self.run is not None:
            self.run.add(report)

    # -- pytest-html --------------------------------------------------------------------------
    @pytest.hookimpl(optionalhook=True)  # pytest-html may be off (-p no:html)
    def pytest_html_report_title(self, report) -> None:
        report.title = f"gpuconform — {self.profile.name} conformance report"
        # the one hook holding pytest-html's data: its environment table puts values into the page
        # as markup, so the suite renders the environment itself (summary_fragments)
        report.set_data("environment", {})

    @pytest.hookimpl(optionalhook=True)  # pytest-html may be off (-p no:html)
    def pytest_html_results_table_header(self, cells: list[str]) -> None:
        report_html.header_cells(cells)

    @pytest.hookimpl(optionalhook=True)  # pytest-html may be off (-p no:html)
    def pytest_html_results_table_row(self, report, cells: list[str]) -> None:
        record = getattr(report, "gpuconform_record", None)
        if record is not None and not report_html.listed(record):
            self._unlisted.add(report.nodeid)
        elif report.when == "teardown" and report.passed and report.nodeid in self._unlisted:
            self._unlisted.discard(report.nodeid)
            cells.clear()  # else pytest-html keeps an empty entry for the result it left out
            return
        report_html.row_cells(record, cells, report.nodeid + ("" if report.when == "call" else f"::{report.when}"))

    @pytest.hookimpl(optionalhook=True)  # pytest-html may be off (-p no:html)
    def pytest_html_results_table_html(self, report, data: list[str]) -> None:
        data[:] = report_html.log_lines(report.longreprtext, [] if report.outcome == "rerun" else list(report.sections))

    @pytest.hookimpl(optionalhook=True)  # pytest-html may be off (-p no:html)
    def pytest_html_results_summary(self, prefix: list, summary: list, postfix: list, session) -> None:
        try:
            from pytest_metadata.plugin import metadata_key
            environment = self.config.stash.get(metadata_key, {})
        except ImportError:
            environment = {}
        if self.run is None or self.run.doc is None:
            postfix.append(report_html.environment_block(environment))
            return
        opt = self.config.option
        pre, mid, post = report_html.summary_fragments(self.run.doc, self.json_path.name, self.run.json_sha256,
                                                       opt.gpuconform_signoff_approver or "",
                                                       opt.gpuconform_signoff_role or "", environment)
        prefix.extend(pre)
        summary.extend(mid)
        postfix.extend(post)

    # -- reports ------------------------------------------------------------------------------
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Draws the verdict and sets the exit code from it: 0 only when ACCEPTED, 1 when REJECTED
        (failures, errors, an expired waiver, nothing ran); pytest's own codes for an interrupted
        run (2), an internal error (3) and bad input (4) stay. Writes the JSON before pytest-html
        (trylast) renders the page, so the page carries its sha256."""
        if self.run is None:
            return
        self.run.interrupted = session.exitstatus == pytest.ExitCode.INTERRUPTED
        if self.json_path is not None:
            try:
                self.run.write_json(self.json_path)
            except OSError as exc:  # the folder went away or filled up during the run: keep the results
                refused = self.json_path
                self._place_reports(inputs.fallback_dir(), self.json_path.stem)
                self.run.write_json(self.json_path)
                _move_html_report(self.config, Path(self.config.option.htmlpath))
                self.fallback_note = (f"gpuconform: could not write {refused} ({exc.strerror or exc}); "
                                      f"the reports are in {self.json_path.parent}")
        else:
            self.run.document()
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED,
                                  pytest.ExitCode.NO_TESTS_COLLECTED):
            accepted = self.run.doc["verdict"]["word"] == "ACCEPTED"
            session.exitstatus = pytest.ExitCode.OK if accepted else pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.run is not None and self.run.doc is not None:
            v = self.run.doc["verdict"]
            why = f" ({'; '.join(v['reasons'])})" if v["reasons"] else ""
            terminalreporter.write_line(f"gpuconform: {v['word']}{why}")
            drift = self.run.doc.get("drift")
            for note in drift_mod.forced_notes(drift, self.run.doc["fingerprint"]["profile"]) if drift else ():
                terminalreporter.write_line(f"gpuconform: compared with {note} (--force-baseline)", yellow=True)
            for line in terminal.remediation_lines(self.run.doc):
                terminalreporter.write_line(line)
            if getattr(self, "fallback_note", None):
                terminalreporter.write_line(self.fallback_note, red=True)
            if self.json_path is not None:
                terminalreporter.write_line(f"gpuconform: JSON results: {self.json_path} (sha256 {self.run.json_sha256})")


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
