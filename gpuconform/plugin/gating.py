""""blocked by <lower check>", the one gate of the three layers: a check whose prerequisite fails
on the same target is not run, it is reported blocked by that prerequisite.

Each check layer (node, cluster, kubeflow: gpuconform/layers.py) registers a :class:`LayerGate`:
the fixture that makes a check one of its own, the check every other check of the layer needs
implicitly (the host or API server answers), and how to get the :class:`Subject` a check is
judged on (its target, the values its prerequisites are called with, why the layer is down) from
the check and a lookup of its fixture values. The autouse fixture of ``fixtures.py`` calls
:func:`blocked_by` for every check set up by pytest, with pytest's lookup; a node check run
directly (plugin/direct.py) calls it with the values it gives.

Prerequisites are evaluated by calling the lower check's own function with the same values, so
the verdict does not depend on test order, selection (-k) or xdist distribution.
"""
from __future__ import annotations

import dataclasses
import functools
import inspect
from pathlib import Path
from typing import Callable

import pytest

from gpuconform.checks import REGISTRY, CheckIdError, unknown_needs
from gpuconform.errors import CannotTell

PASS, FAIL, SKIP = "pass", "fail", "skip"


@dataclasses.dataclass(frozen=True)
class Subject:
    """What a check is judged on, as the gate sees it."""
    target: str                 #: the host, GPU node, "cluster" or "kubeflow": outcomes are kept per target
    values: Callable[[], dict]  #: fixture name → value, for calling prerequisites (asked only when needed)
    down: str | None = None     #: why the layer's own first check fails (host or API server silent)


@dataclasses.dataclass(frozen=True)
class LayerGate:
    fixture: str                #: a check asking for this fixture belongs to the layer
    reachable: str | None       #: the check every other check of the layer needs implicitly
    reachable_rule: str         #: its rule in a few words, shown in "blocked by"
    subject: Callable[[pytest.Item, Callable[[str], object]], Subject]  #: (check, fixture name → value)


#: fixture name → the gate of its layer; each layer's fixtures module (or conftest) registers its own.
GATES: dict[str, LayerGate] = {}
GATE = pytest.StashKey["Gate"]()


def register(layer: LayerGate) -> LayerGate:
    GATES[layer.fixture] = layer
    return layer


def blocked(check_id: str, rule: str, why: object) -> str:
    """The one wording of a blocked result."""
    return f"blocked by {check_id} ({rule}): {why}"


@functools.cache
def _parameters(fn: Callable) -> tuple[str, ...]:
    """A check function's parameter names (read once per function, not once per target)."""
    return tuple(inspect.signature(fn).parameters)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.split("\nassert ")[0].splitlines()[0] if text else type(exc).__name__


class Gate:
    """Prerequisite outcomes of one run, per (check id, target): (outcome, why)."""

    def __init__(self) -> None:
        self._outcomes: dict[tuple[str, str], tuple[str, str]] = {}

    def outcome(self, check_id: str, target: str, values: dict, _seen: tuple[str, ...] = ()) -> tuple[str, str]:
        key = (check_id, target)
        if key in self._outcomes:
            return self._outcomes[key]
        entry = REGISTRY.get(check_id)
        if entry is None:
            raise CheckIdError(f"prerequisite {check_id} is not a loaded check")
        if check_id in _seen:
            raise CheckIdError(f"prerequisites form a cycle: {' -> '.join((*_seen, check_id))}")
        blocked_why = self.blocker(entry["needs"], target, values, (*_seen, check_id))
        if blocked_why:
            result = (FAIL, blocked_why)
        else:
            params = _parameters(entry["fn"])
            if not set(params) <= set(values):
                return PASS, "prerequisite needs other fixtures"
            try:
                entry["fn"](**{p: values[p] for p in params})
                result = (PASS, "")
            except AssertionError as exc:
                result = (FAIL, blocked(check_id, entry["title"], _first_line(exc)))
            except (pytest.skip.Exception, CannotTell) as exc:
                result = (SKIP, str(exc))
        self._outcomes[key] = result
        return result

    def blocker(self, needs: tuple[str, ...], target: str, values: dict, _seen: tuple[str, ...] = ()) -> str | None:
        """The 'blocked by ...' reason of the first failing prerequisite, else None. A
        prerequisite that could not be checked by a library error (e.g. ClusterError) raises it:
        this check could not be checked either."""
        for need in needs:
            outcome, why = self.outcome(need, target, values, _seen)
            if outcome == FAIL:
                return why
        return None


def gate_of(config: pytest.Config) -> Gate:
    if GATE not in config.stash:
        config.stash[GATE] = Gate()
    return config.stash[GATE]


def blocked_by(item: pytest.Item, value: Callable[[str], object]) -> str | None:
    """Why the check ``item`` must not run ("blocked by ..."), or None; ``value`` gives the value
    of one of its fixtures by name. A check of two layers (a kubeflow check reading the cluster)
    is gated by both."""
    mark = item.get_closest_marker("check")
    if mark is None:
        return None
    check_id = mark.kwargs["id"]
    layers = [lay for name, lay in GATES.items() if name in item.fixturenames and lay.reachable != check_id]
    subjects = [(lay, lay.subject(item, value)) for lay in layers]
    for lay, subject in subjects:
        if subject.down:
            return blocked(lay.reachable, lay.reachable_rule, subject.down)
    needs = mark.kwargs.get("needs", ())
    for _, subject in subjects if needs else ():
        reason = gate_of(item.config).blocker(needs, subject.target, subject.values())
        if reason:
            return reason
    return None


def load_prerequisites(session: pytest.Session) -> None:
    """Make every ``needs`` of the collected checks resolve: a prerequisite declared in a file that
    was not selected (``pytest tests/cluster/test_workloads.py``) is imported from the same
    folder as pytest's collection imports it (the run's import mode); an id that no check
    declares stops the run (one line)."""
    folders = {item.path.parent for item in session.items
               if (m := item.get_closest_marker("check")) and any(n not in REGISTRY for n in m.kwargs.get("needs", ()))}
    for folder in sorted(folders):
        for path in sorted(Path(folder).glob("test_*.py")):
            pytest.Module.from_parent(session, path=path).obj  # noqa: B018 - imported as its collection would
    unknown = unknown_needs()
    if unknown:
        raise pytest.UsageError(f"unknown prerequisite check id(s): {'; '.join(unknown)}")
