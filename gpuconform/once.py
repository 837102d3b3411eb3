"""Compute once, remember the error: the one memo of the library and the plugin.

A fact read from a platform (a list of nodes, a login, a served certificate, a pod run) is read
the first time a check asks and kept for the run. When reading it fails with one of the
expected errors ("could not check"), that error is kept too and raised again to every later
asker: a dead endpoint costs one timeout, not one per check.
"""
from __future__ import annotations

import functools
import threading
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


class Once:
    """Values by key, each computed once; ``errors`` raised by the computation are remembered
    and raised again (with a fresh traceback) on every later :meth:`get` of that key."""

    def __init__(self, *errors: type[BaseException]):
        self.errors = errors
        self._done: dict[Hashable, tuple[bool, object]] = {}
        self._lock = threading.RLock()  # re-entrant: one fact may be computed from another

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            if key not in self._done:
                try:
                    self._done[key] = (True, compute())
                except self.errors as exc:
                    self._done[key] = (False, exc)
            ok, value = self._done[key]
        if not ok:
            raise value.with_traceback(None)  # type: ignore[union-attr]
        return value  # type: ignore[return-value]

    def __contains__(self, key: Hashable) -> bool:
        return key in self._done


def once(fn: Callable[..., T]) -> Callable[..., T]:
    """Method decorator: one :meth:`Once.get` per (method, arguments) on the instance's
    ``_once`` (a :class:`Once` naming the errors to remember)."""
    @functools.wraps(fn)
    def wrapper(self, *args):
        return self._once.get((fn.__name__, *args), lambda: fn(self, *args))
    return wrapper
