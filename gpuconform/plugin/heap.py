"""The garbage collector at fleet scale: thousands of checks keep what they make.

Collection makes the items (their fixtures, marks, the cluster's node list) and the run makes a
report per phase of each check; all of it lives until the process ends. The collector's full
passes would walk it again and again as it grows: measured, 1 s of a 100-host node run's 10 s
of CPU and 3 s of a 3,000-node cluster run's 25 s. So what is made up to each stage is frozen out
of those passes (``gc.freeze``): after the suite's modules load (the collector paused meanwhile:
plugin/plugin.py), before collection (the other plugins, configuration), after it (the collector
is paused while it runs: it makes items, not garbage; gpuconform/gcpause.py), and before the
reports are built. Garbage a check makes is still collected as usual.
"""
from __future__ import annotations

import contextlib
import gc

import pytest

from gpuconform import gcpause

_PAUSE = pytest.StashKey[contextlib.ExitStack]()


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    gc.freeze()
    session.stash[_PAUSE] = contextlib.ExitStack()
    session.stash[_PAUSE].enter_context(gcpause.paused())


def _resume(session: pytest.Session) -> None:
    pause = session.stash.get(_PAUSE, None)
    if pause is not None:
        pause.close()  # once: a closed stack has nothing left to exit


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    gc.freeze()
    _resume(session)


@pytest.hookimpl(tryfirst=True)  # before the JSON and HTML reports are built from what the run made
def pytest_sessionfinish(session: pytest.Session) -> None:
    _resume(session)  # a collection that ended early
    gc.freeze()
