"""How a conformance check declares itself: a stable id, a title, its fix, its prerequisites.

    @check("node.driver.version", "Loaded NVIDIA driver is the profile's version",
           fix="...", needs=["node.driver.modules_loaded"], evidence=["driver_version"])
    def test_driver_version(node, expected): ...

``needs`` names lower checks: when one of them fails on the same target, this check is reported
"blocked by <id>" instead of failing a second time. ``fix`` is the remediation shown with a
failure: a string, or a mapping of OS family (rhel, debian, suse) to text with a ``default``.
"""
from __future__ import annotations

from typing import Callable, Mapping

import pytest

#: check id → (test function, needs, title); filled as test modules are imported.
REGISTRY: dict[str, dict] = {}


def check(check_id: str, title: str, *, fix: str | Mapping[str, str] | None = None,
          needs: tuple[str, ...] | list[str] = (), evidence: tuple[str, ...] | list[str] = ()) -> Callable:
    mark = pytest.mark.check(id=check_id, title=title, fix=fix, needs=tuple(needs),
                             evidence=tuple(evidence))

    def decorate(fn: Callable) -> Callable:
        REGISTRY.setdefault(check_id, {"fn": fn, "needs": tuple(needs), "title": title})
        return mark(fn)
    return decorate


def fix_for(fix: str | Mapping[str, str] | None, family: str | None) -> str | None:
    if fix is None or isinstance(fix, str):
        return fix
    return fix.get(family or "", fix.get("default") or next(iter(fix.values()), None))
