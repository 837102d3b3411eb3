""""blocked by <lower check>": a check whose prerequisite fails on the same target is not run.

Prerequisites are evaluated by calling the lower check's own function with the same facts, so
the verdict does not depend on test order, selection (-k) or xdist distribution.
"""
from __future__ import annotations

import inspect

import pytest

from gpuconform.checks import REGISTRY
from gpuconform.node.facts import CannotTell

PASS, FAIL, SKIP = "pass", "fail", "skip"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.split("\nassert ")[0].splitlines()[0] if text else type(exc).__name__


class Gate:
    """Per-target cache of prerequisite outcomes: (check id, target) → (outcome, why)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], tuple[str, str]] = {}

    def outcome(self, check_id: str, target: str, values: dict, _depth: int = 0) -> tuple[str, str]:
        key = (check_id, target)
        if key in self._cache:
            return self._cache[key]
        entry = REGISTRY.get(check_id)
        if entry is None or _depth > 10:
            return PASS, "prerequisite not loaded"
        blocked = self.blocker(entry["needs"], target, values, _depth + 1)
        if blocked:
            result = (FAIL, blocked)
        else:
            fn = entry["fn"]
            params = inspect.signature(fn).parameters
            if not set(params) <= set(values):
                return PASS, "prerequisite needs other fixtures"
            try:
                fn(**{p: values[p] for p in params})
                result = (PASS, "")
            except AssertionError as exc:
                result = (FAIL, f"blocked by {check_id} ({entry['title']}): {_first_line(exc)}")
            except (pytest.skip.Exception, CannotTell) as exc:
                result = (SKIP, str(exc))
        self._cache[key] = result
        return result

    def blocker(self, needs: tuple[str, ...], target: str, values: dict, _depth: int = 0) -> str | None:
        """The 'blocked by ...' reason of the first failing prerequisite, else None."""
        for need in needs:
            outcome, why = self.outcome(need, target, values, _depth)
            if outcome == FAIL:
                return why
        return None
