"""The report writers, wired to pytest: the JSON (report/run.py), the HTML page (pytest-html's
hooks, fed by report/html.py), JUnit (pytest's junitxml, corrected by report/junit.py), the
terminal's closing lines, and the exit code drawn from the records' verdict. Hooks (hooks.py)
make the records; this module only carries them to the files.

One write into ``config.option`` remains, :func:`name_the_page`: pytest-html takes the page's path
from its ``--html`` option when it configures itself and offers no other way to name it, so the
suite's default page (next to the JSON, self-contained, with the suite's stylesheet) is set
there, before pytest-html's ``pytest_configure`` runs.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from gpuconform.plugin import inputs
from gpuconform.report import drift as drift_mod
from gpuconform.report import html as report_html
from gpuconform.report import junit, terminal
from gpuconform.report.run import RunReport

CSS = Path(__file__).resolve().parent.parent / "report" / "report.css"

#: What ``gpuconform run`` and pytest return (plugin/plugin.py EXIT_CODES says it in words)
ACCEPTED, REJECTED = pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED


def exit_code(doc: dict | None, status: int) -> int:
    """The run's exit code from its verdict: 0 only when ACCEPTED, 1 when REJECTED (failures,
    errors, an expired waiver, nothing ran); pytest's own codes for an interrupted run (2), an
    internal error (3) and bad input (4) stay."""
    if doc is None or status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED,
                                     pytest.ExitCode.NO_TESTS_COLLECTED):
        return status
    return ACCEPTED if doc["verdict"]["word"] == "ACCEPTED" else REJECTED


def name_the_page(config: pytest.Config, paths: inputs.ReportPaths | None) -> bool:
    """Give pytest-html the suite's page path when the run named none (--html): the one write
    into ``config.option`` (the module's docstring says why). True when the page is the suite's."""
    opt = config.option
    if paths is None:  # --no-reports, --collect-only, an xdist worker
        return False
    ours = hasattr(opt, "self_contained_html") and getattr(opt, "htmlpath", None) is None
    if ours:
        opt.htmlpath = str(paths.html)
        opt.self_contained_html = True
    if getattr(opt, "htmlpath", None) and isinstance(getattr(opt, "css", None), list):
        opt.css.append(str(CSS))
    return ours


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


def _pytest_html_script() -> str:
    """pytest-html's own page script (its app.js), the other script the page may run."""
    from importlib.resources import files
    return files("pytest_html").joinpath("resources", "app.js").read_text(encoding="utf-8")


def html_extras(config: pytest.Config, report: pytest.TestReport, record: dict) -> None:
    """A listed result's detail panel on pytest-html's row (passes are in the matrix and the JSON)."""
    html = config.pluginmanager.getplugin("html")
    if html is not None and report_html.listed(record):
        report.extras = [*getattr(report, "extras", []), html.extras.html(report_html.detail(record))]


class ReportFiles:
    """Around the writing of the reports (JSON: :class:`Reports`, HTML: pytest-html, JUnit: pytest's
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


class Reports:
    """The run's report on the process that writes it (the xdist controller or the only one; on a
    worker, and with --collect-only, there is none): records gathered as reports arrive, the
    files written at the end, the exit code set from the verdict."""

    def __init__(self, config: pytest.Config, run_inputs: inputs.RunInputs):
        self.config = config
        self.inputs = run_inputs
        self.profile = run_inputs.profile
        self._unlisted: set[str] = set()  # results the HTML table leaves out (clean passes)
        self.run: RunReport | None = None
        self.json_path: Path | None = None
        self._html_moved: Path | None = None
        self.fallback_note: str | None = None
        opt = config.option
        # the verdict (and so the exit code) is drawn on the controller even with --no-reports
        if not (opt.collectonly or hasattr(config, "workerinput")):
            self.run = RunReport(self.profile, run_inputs.waivers, run_inputs.suite,
                                 tuple(config.invocation_params.args), run_inputs.selection, run_inputs.today,
                                 run_inputs.baseline, run_inputs.fail_on_drift, started=run_inputs.started)
        self._ours = name_the_page(config, run_inputs.reports)
        if run_inputs.reports is not None:
            self.json_path = run_inputs.reports.json

    @property
    def html_path(self) -> Path | None:
        """Where the page is written (pytest-html's --html, the suite's default, or the fallback)."""
        if self._html_moved is not None:
            return self._html_moved
        html = getattr(self.config.option, "htmlpath", None)
        return Path(html) if html else None

    # -- results ------------------------------------------------------------------------------
    @pytest.hookimpl(trylast=True)  # after pytest's junitxml has written the testcase
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        junit.error_not_failure(self.config, report)
        if self.run is not None:
            self.run.add(report)

    # -- the files ----------------------------------------------------------------------------
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Writes the JSON before pytest-html (trylast) renders the page, so the page carries its
        sha256; sets the exit code from the verdict (:func:`exit_code`)."""
        if self.run is None:
            return
        self.run.interrupted = session.exitstatus == pytest.ExitCode.INTERRUPTED
        if self.json_path is not None:
            try:
                self.run.write_json(self.json_path)
            except OSError as exc:  # the folder went away or filled up during the run: keep the results
                refused = self.json_path
                fallback = inputs.ReportPaths(inputs.fallback_dir(), refused.stem)
                self.json_path = fallback.json
                self.run.write_json(self.json_path)
                if self._ours:
                    self._html_moved = fallback.html
                    _move_html_report(self.config, fallback.html)
                self.fallback_note = (f"gpuconform: could not write {refused} ({exc.strerror or exc}); "
                                      f"the reports are in {self.json_path.parent}")
        else:
            self.run.document()
        session.exitstatus = exit_code(self.run.doc, session.exitstatus)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.run is None or self.run.doc is None:
            return
        v = self.run.doc["verdict"]
        why = f" ({'; '.join(v['reasons'])})" if v["reasons"] else ""
        terminalreporter.write_line(f"gpuconform: {v['word']}{why}")
        drift = self.run.doc.get("drift")
        for note in drift_mod.forced_notes(drift, self.run.doc["fingerprint"]["profile"]) if drift else ():
            terminalreporter.write_line(f"gpuconform: compared with {note} (--force-baseline)", yellow=True)
        for line in terminal.remediation_lines(self.run.doc):
            terminalreporter.write_line(line)
        if self.fallback_note:
            terminalreporter.write_line(self.fallback_note, red=True)
        if self.json_path is not None:
            terminalreporter.write_line(f"gpuconform: JSON results: {self.json_path} (sha256 {self.run.json_sha256})")

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
        if report.when == "setup" and report.passed:  # pytest-html shows none: no cells, no row formatted
            cells.clear()
            return
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
