"""``--ai-conformance=DIR``: the PRODUCT.yaml of the CNCF Kubernetes AI Conformance program
(gpuconform/aiconformance/), written when every report of the run is (they are its evidence), on
the process that writes the reports, then judged by the program's rules (a line per problem)."""
from __future__ import annotations

from functools import cached_property
from pathlib import Path

import pytest

from gpuconform.aiconformance import checklist as checklists, export, mapping, rules


MARKER = "aiconformance"
FILE = "PRODUCT.yaml"
SHOWN_PROBLEMS = 20


class Export:
    def __init__(self, config: pytest.Config, reports, profile, folder: Path | None):
        """``folder``: --ai-conformance's, checked with every input (plugin/inputs.py); None: none written here."""
        self.config = config
        self.reports = reports
        self.section = profile.profile.ai_conformance
        self.folder = folder

    @cached_property
    def checklist(self) -> checklists.Checklist:
        """The profile's checklist, read when a check may decide one of its requirements or the
        export is written: a node run reads no YAML of the program (issue #27)."""
        return checklists.load(self.section.chosen_checklist())

    @pytest.hookimpl(tryfirst=True)
    def pytest_pycollect_makeitem(self, collector, name: str, obj) -> None:
        """A check that decides a requirement of the profile's checklist (mapping.py) carries the
        ``aiconformance`` marker on its function, before its items are made: ``-m aiconformance``
        runs all that feeds the export, and a check parametrized from the cluster sees itself
        selected when its parameters are drawn (tests/cluster/conftest.py)."""
        marks = getattr(obj, "pytestmark", None) if callable(obj) else None
        if not isinstance(marks, list):  # a class may hold one MarkDecorator; checks are functions
            return
        check_id = next((m.kwargs.get("id", "") for m in marks if getattr(m, "name", None) == "check"), None)
        if check_id and mapping.may_decide(check_id) and mapping.requirement_of(check_id, self.checklist.ids()) \
                and not any(m.name == MARKER for m in marks):
            pytest.mark.aiconformance(obj)

    @pytest.hookimpl(wrapper=True)  # after the JSON (reporting.Reports), the HTML (pytest-html) and JUnit are written
    def pytest_sessionfinish(self, session: pytest.Session):
        result = yield
        run = self.reports.run
        if self.folder is not None and run is not None and run.doc is not None:
            self._write(run.doc)
        return result

    def _report_files(self) -> list[Path | None]:
        from _pytest.junitxml import xml_key
        xml = self.config.stash.get(xml_key, None)
        return [self.reports.html_path, self.reports.json_path, Path(xml.logfile) if xml else None]

    def _write(self, doc: dict) -> None:
        path = self.folder / FILE
        evidence = export.relative_evidence(self._report_files(), self.folder)
        product = export.product_document(doc, self.checklist, self.section.product.metadata(),
                                          self.section.requirements, evidence)
        try:
            export.write(path, product, self.checklist, self.reports.json_path.name)
        except OSError as exc:
            self._say(f"gpuconform: could not write {path} ({exc.strerror or exc})", red=True)
            return
        found = rules.problems(path, self.checklist)
        verdict = "passes the program's rules" if not found else f"fails {len(found)} of the program's rules:"
        self._say("")  # off the progress line
        self._say(f"gpuconform: AI conformance: {path} (checklist {self.checklist.version}) {verdict}")
        for problem in found[:SHOWN_PROBLEMS]:
            self._say(f"  - {problem}", yellow=True)
        if len(found) > SHOWN_PROBLEMS:
            self._say(f"  … and {len(found) - SHOWN_PROBLEMS} more")

    def _say(self, line: str, **markup) -> None:
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(line, **markup)
