"""How a conformance check declares itself: a stable id, a title, its fix, its prerequisites.

    @check("node.driver.version", "Loaded NVIDIA driver is the profile's version",
           fix="...", needs=["node.driver.modules_loaded"], evidence=["driver_version"])
    def test_driver_version(node, expected): ...

``needs`` names lower checks: when one of them fails on the same target, this check is reported
"blocked by <id>" instead of failing a second time. ``fix`` is the remediation shown with a
failure: a string, or a mapping of OS family (rhel, debian, suse) to text with a ``default``.

Ids are stable and written as literal strings, in ``@check`` and in ``needs`` alike, so that one
grep finds every use. The registry refuses a second check with an id already taken, and
:func:`unknown_needs` names every ``needs`` id no loaded check declares (the plugin refuses to
run then): a typo never counts as a passed prerequisite.
"""
from __future__ import annotations

from typing import Callable, Mapping

import pytest

#: check id → {"fn", "needs", "title"}; filled as test modules are imported.
REGISTRY: dict[str, dict] = {}


class CheckIdError(Exception):
    """A check id is declared twice, or ``needs`` names an id no check declares."""


def _where(fn: Callable) -> str:
    code = fn.__code__
    return f"{code.co_filename}:{code.co_firstlineno}"


def check(check_id: str, title: str, *, fix: str | Mapping[str, str] | None = None,
          needs: tuple[str, ...] | list[str] = (), evidence: tuple[str, ...] | list[str] = ()) -> Callable:
    mark = pytest.mark.check(id=check_id, title=title, fix=fix, needs=tuple(needs),
                             evidence=tuple(evidence))

    def decorate(fn: Callable) -> Callable:
        taken = REGISTRY.get(check_id)
        if taken is not None and _where(taken["fn"]) != _where(fn):  # the same module imported again is no duplicate
            raise CheckIdError(f"check id {check_id} of {_where(fn)} is already taken by {_where(taken['fn'])}")
        REGISTRY[check_id] = {"fn": fn, "needs": tuple(needs), "title": title}
        return mark(fn)
    return decorate


def unknown_needs(registry: Mapping[str, dict] | None = None) -> list[str]:
    """``"<check> needs <id>"`` for every prerequisite that no check of ``registry`` declares."""
    registry = REGISTRY if registry is None else registry
    return [f"{cid} needs {need}" for cid, entry in sorted(registry.items())
            for need in entry["needs"] if need not in registry]


def fix_for(fix: str | Mapping[str, str] | None, family: str | None) -> str | None:
    if fix is None or isinstance(fix, str):
        return fix
    return fix.get(family or "", fix.get("default") or next(iter(fix.values()), None))
