"""JUnit for CI dashboards: an error ("could not check") is ``<error>``, never ``<failure>``.

pytest's junitxml writes ``<error>`` only for setup and teardown failures; a check that could not
check raises in its call phase, so the ``<failure>`` element junitxml has just written for it is
renamed, and the suite's counts moved with it. ``blocked`` and ``skip`` are ``<skipped>`` with
their reason ("blocked by <check> ..."), as junitxml writes them.
"""
from __future__ import annotations

import pytest
from _pytest.junitxml import xml_key

from gpuconform.report.record import verdict_in


def error_not_failure(config: pytest.Config, report: pytest.TestReport) -> None:
    """Run after junitxml handled ``report`` (a trylast logreport hook)."""
    xml = config.stash.get(xml_key, None)
    if xml is None or report.when != "call" or verdict_in(report) != "error":
        return
    for node in xml.node_reporter(report).nodes:
        if node.tag == "failure":
            node.tag = "error"
            xml.stats["failure"] -= 1
            xml.stats["error"] += 1
