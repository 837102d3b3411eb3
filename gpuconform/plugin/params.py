"""A check parametrized over a list the profile gives: one test per item, and for an empty list one
result saying so, never pytest's "got empty parameter set" (the one path for the three layers)."""
from __future__ import annotations

from typing import Callable, Iterable, Mapping

import pytest

NONE = "<none>"


def parametrize(metafunc: pytest.Metafunc, fixture: str, items: Iterable, field: str,
                label: Callable[[object], str] = str, skipped: Mapping[object, str] | None = None) -> None:
    """``metafunc.parametrize(fixture, items)`` with ids ``label(item)``; no items: one ``<none>``
    test, skipped because the profile lists nothing at ``field``. An item in ``skipped`` (a
    placeholder saying the platform has none of them) is skipped with the reason given there,
    when the test is set up, without a fixture run on every other item."""
    values = list(items)
    params = [pytest.param(v, id=label(v), marks=[pytest.mark.skip(reason=skipped[v])] if skipped and v in skipped
                           else ()) for v in values] or [
        pytest.param(NONE, id=NONE, marks=pytest.mark.skip(
            reason=f"the profile lists nothing to check here ({field} is empty)"))]
    metafunc.parametrize(fixture, params)
