"""Node checks run directly: a check on a host that asks for nothing but its host's facts
(``node``), what the profile expects of the host (``expected``), the host and its own parameters
goes through pytest's runtest hooks without pytest's fixture setup (issue #27).

At 100 hosts a node run is 5,000 checks, and pytest's setup of each (fixture lookups, the capture
and log-capture wrappers around each phase, a report per phase) cost more CPU than the checks,
on a runner that shares its CPUs with the probes: the suite took 4.5 CPU-s of the 3.2 that 1.1
times the probes' bound leaves it; here 3.1. Each check is still one item with its own node id,
reported through the same hooks (``pytest_runtest_logstart``, ``pytest_runtest_makereport`` and
``pytest_runtest_logreport``, ``pytest_runtest_logfinish``), so the records, JUnit, the HTML page,
the terminal, ``-x``, ``--lf`` and xdist see the same results. What differs is where the values
come from:

* setup: the gate (plugin/gating.py) with the values below, as the autouse gate fixture asks it;
  ``node`` and ``expected`` from the same functions as their fixtures (plugin/fixtures.py), a
  parameter from the check's parameters. A setup that passes quickly is not reported: it has
  nothing to show (no output, no outcome but "passed"), and three reports per check instead of
  two were a tenth of the runner's CPU. One that took at least pytest's ``--durations-min``
  (0.005 s unless set, 0 under ``-vv``), a check that waited for its host's probe, is reported:
  ``--durations``, JUnit's times and the HTML page count that wait as they count a fixture's
  setup under pytest. One that skips ("blocked by", a profile without ``node:``) or fails is
  reported as pytest reports it, and the check is not called;
* call: ``item.runtest()``, pytest's own call of the test function with those values;
* teardown: pytest's teardown of what a check set up by pytest before it left
  (``SetupState.teardown_exact``), so a check pytest sets up after it starts clean.

Each phase runs under pytest's capture manager, as pytest runs it. A check asking for any other
fixture (a cluster's, remediation's autouse one, a conftest's), one with a skip, skipif or xfail
mark, and every check of a file where a conftest or another plugin implements the setup, call or
teardown hook, goes through pytest's protocol as before.
"""
from __future__ import annotations

import contextlib

import pytest

from gpuconform.plugin import fixtures, gating
from gpuconform.plugin.hosts import PARAM

#: the fixtures this module gives a check itself (the rest must be the check's own parameters)
GIVEN = frozenset({"node", "expected", "host", PARAM, "_gpuconform_blocked_by"})
#: marks pytest acts on in its setup (an empty profile list is a parameter set skipped by mark:
#: plugin/params.py): a check carrying one goes through pytest's protocol
PYTEST_MARKS = ("skip", "skipif", "xfail")
#: where the setup, call and teardown hooks a check may run directly under come from
OWN_MODULES = ("_pytest.", "gpuconform.")
_OWN_PHASES = pytest.StashKey[dict]()
_PLACES = pytest.StashKey[dict]()
#: pytest's exceptions that end the run rather than the check (as pytest's runner lets them through)
ENDS_RUN = (pytest.exit.Exception, KeyboardInterrupt)
#: pytest's default ``--durations-min`` (seconds)
DURATIONS_MIN_S = 0.005


def runs_directly(item: pytest.Item) -> bool:
    """A node check whose every fixture is one :data:`GIVEN` or one of its parameters, and no mark
    of :data:`PYTEST_MARKS` (not under ``--setup-only``, ``--setup-plan`` or ``--pdb``: pytest's
    protocol shows those)."""
    params = getattr(getattr(item, "callspec", None), "params", None)
    if not params or PARAM not in params:
        return False
    marks = {mark.name for mark in item.iter_markers()}
    if "check" not in marks or not marks.isdisjoint(PYTEST_MARKS):
        return False
    option = item.config.option
    if any(getattr(option, name, False) for name in ("setuponly", "setupplan", "usepdb")):
        return False
    return all(name in GIVEN or name in params for name in item.fixturenames) and _only_own_phases(item)


def _only_own_phases(item: pytest.Item) -> bool:
    """Every implementation of the setup, call and teardown hooks that applies to ``item`` is
    pytest's or the suite's: a conftest or another plugin acting there gets pytest's protocol
    (asked once per file of checks: conftests apply by path)."""
    known = item.config.stash.setdefault(_OWN_PHASES, {})
    if item.path not in known:
        known[item.path] = all(
            getattr(impl.function, "__module__", "").startswith(OWN_MODULES)
            for hook in ("pytest_runtest_setup", "pytest_runtest_call", "pytest_runtest_teardown")
            for impl in getattr(item.ihook, hook).get_hookimpls())
    return known[item.path]


def _locate(item: pytest.Function) -> None:
    """``item.location`` from where its function is, found once per function: pytest finds it
    for each item (the source file's path checked on disk each time), the same for every host's
    item of a check. The item's own part, its name with its parameters, is still its own."""
    if "location" in item.__dict__ or type(item).reportinfo is not pytest.Function.reportinfo:
        return
    places = item.config.stash.setdefault(_PLACES, {})
    place = places.get(item.obj)
    if place is None:
        place = places[item.obj] = item.location[:2]
    else:
        item.__dict__["location"] = (*place, item.getmodpath())  # pytest's cached_property keeps it here


def _durations_min(config: pytest.Config) -> float:
    """The least phase pytest's ``--durations`` lists: ``--durations-min``, else 0.005 s (0 from
    ``-vv`` on), as pytest's runner reads it."""
    value = getattr(config.option, "durations_min", None)
    if value is not None:
        return value
    return DURATIONS_MIN_S if config.get_verbosity() < 2 else 0.0


def _setup(item: pytest.Function) -> None:
    """The values of the check's arguments, in ``item.funcargs`` once the gate let it run and all
    are made (as pytest fills them: a check stopped in its setup has none). A skip on the way
    ("blocked by", a profile without ``node:``) is placed at the check, as pytest places a skip
    raised by a fixture (``_pytest/fixtures.py`` ``pytest_fixture_setup``), not at this module."""
    try:
        _make_values(item)
    except pytest.skip.Exception as exc:
        exc._use_item_location = True
        raise


def _make_values(item: pytest.Function) -> None:
    config, params = item.config, item.callspec.params
    host = params[PARAM]
    values = {name: params[name] for name in item.fixturenames if name in params}
    values["host"] = host
    made = {"node": lambda: fixtures.node_facts(config, host), "expected": lambda: fixtures.expectations(config, host)}

    def value(name: str):
        if name not in values:
            values[name] = made[name]()
        return values[name]
    reason = gating.blocked_by(item, value)
    if reason:
        pytest.skip(reason)
    for name in item._fixtureinfo.argnames:
        value(name)
    item.funcargs = values


def _phase(item: pytest.Item, ihook, when: str, fn, report_passed_from: float = 0.0) -> bool:
    """One phase as pytest's runner has it: run under the capture manager (what it prints joins
    the item's report sections), then its report made and logged (``ihook``: the item's hooks,
    looked up once); whether it passed. A phase that passed in less than ``report_passed_from``
    seconds is not reported (its output, if any, is in the next phase's report)."""
    capture = item.config.pluginmanager.get_plugin("capturemanager")
    with capture.item_capture(when, item) if capture is not None else contextlib.nullcontext():
        call = pytest.CallInfo.from_call(fn, when=when, reraise=ENDS_RUN)
    if call.excinfo is None and call.duration < report_passed_from:
        return True
    report = ihook.pytest_runtest_makereport(item=item, call=call)
    ihook.pytest_runtest_logreport(report=report)
    return report.passed


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if not runs_directly(item):
        return None
    ihook = item.ihook
    _locate(item)
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    item.funcargs = {}
    if _phase(item, ihook, "setup", lambda: _setup(item), report_passed_from=_durations_min(item.config)):
        _phase(item, ihook, "call", item.runtest)
    _phase(item, ihook, "teardown", lambda: item.session._setupstate.teardown_exact(nextitem))
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    item.funcargs = None  # as pytest's runner: the values are the check's only while it runs
    return True
