"""A check that could not check gets its report without pytest formatting a traceback first
(gpuconform/plugin/hooks.py OneLineReports): the report says the reason in one line and keeps
what pytest's own report keeps (captured output, properties, timing); anything else is left to
pytest. (That the verdict, JSON, JUnit and HTML say "could not check: ..." is proven by every
could-not-check case of selftest/, which all go through it.)"""
import types

import pytest

from gpuconform.node.facts import CannotTell
from gpuconform.plugin.hooks import OneLineReports


def _item(marked: bool = True):
    return types.SimpleNamespace(
        nodeid="tests/node/test_x.py::test_x[h1]", location=("tests/node/test_x.py", 3, "test_x[h1]"),
        keywords={"test_x": 1, "node": 1}, _report_sections=[("call", "stdout", "probe said hello\n")],
        user_properties=[("check_id", "node.x")],
        get_closest_marker=lambda name: object() if marked and name == "check" else None)


def _call(exc: BaseException) -> pytest.CallInfo:
    def raises():
        raise exc
    return pytest.CallInfo.from_call(raises, "call")


def test_could_not_check_is_one_line_with_what_pytest_keeps():
    call = _call(CannotTell("cannot read /proc/modules: permission denied"))
    report = OneLineReports.pytest_runtest_makereport(_item(), call)
    assert report.failed and report.when == "call" and report.nodeid.endswith("[h1]")
    assert report.longrepr == "cannot read /proc/modules: permission denied"
    assert report.sections == [("Captured stdout call", "probe said hello\n")]
    assert report.user_properties == [("check_id", "node.x")] and report.duration == call.duration


@pytest.mark.parametrize("exc, marked", [(AssertionError("expected 2, found 1"), True),
                                         (CannotTell("x"), False)])
def test_a_failed_rule_or_an_unmarked_test_is_pytests_to_report(exc, marked):
    assert OneLineReports.pytest_runtest_makereport(_item(marked), _call(exc)) is None
