"""The one wait helper of the cluster library.

:func:`wait_for` calls an attempt until it gives a result or the deadline passes (tenacity
underneath: the deadline, the pause between attempts, the backoff after a transient error).
:func:`watch_until` is that wait over a list+watch: each attempt lists (when it must) and follows
the watch until the condition holds or the server ends the stream; a dropped watch, 410 Gone or
a transient API error (429/5xx, refused connection) is retried with backoff by a new list+watch.
A timeout says what was awaited and the last state seen.

Every wait shows its progress: one line per wait with the object, its last state and the time
left (:class:`Progress`), updated in place on a terminal, printed on a change of state (or
every ``every_s`` seconds) when the output is a log.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable, TextIO, TypeVar

import urllib3
from tenacity import RetryCallState, Retrying, retry_if_exception_type, retry_if_result

from gpuconform.cluster.connect import Cluster, _k8s, transient
from gpuconform.cluster.errors import api_error
from gpuconform.safetext import terminal_text  # the cluster's words are data: none of their escapes reach the terminal

T = TypeVar("T")
Objects = dict[str, dict]
#: A watch with no events is renewed this often, so that a long wait still shows its progress.
PROGRESS_TICK_S = 5.0


class WaitTimeout(Exception):
    """What was awaited did not happen in time; str() names it and the last state seen."""


class Stop(Exception):
    """Raised by a condition to end the wait at once: a terminal state that will not change."""


class _Dropped(Exception):
    """The watch broke off (network, 410 Gone, transient API error): list and watch again."""


# -- progress -----------------------------------------------------------------------------------
class Progress:
    """Where waits tell how they are doing. On a terminal (``tty``) each wait is one line
    rewritten in place; in a log, a line when the state changes or ``every_s`` after the last.
    Waits shorter than ``quiet_s`` print nothing."""

    def __init__(self, write: Callable[[str], None], *, tty: bool, every_s: float = 30.0, quiet_s: float = 2.0,
                 width: int = 160):
        self.write, self.tty, self.every_s, self.quiet_s, self.width = write, tty, every_s, quiet_s, width

    @classmethod
    def to(cls, stream: TextIO, **kwargs) -> "Progress":
        def write(text: str) -> None:
            stream.write(text)
            stream.flush()
        return cls(write, tty=stream.isatty(), **kwargs)

    def line(self, what: str, deadline: float) -> "ProgressLine":
        return ProgressLine(self, what, deadline)


class ProgressLine:
    """The line of one wait: :meth:`state` with each state seen, :meth:`end` once."""

    def __init__(self, progress: Progress, what: str, deadline: float):
        self.p, self.what, self.deadline = progress, what, deadline
        self.started = time.monotonic()
        self.last_state = ""
        self.shown_state: str | None = None
        self.shown_at = 0.0
        self.shown = False

    def _text(self, state: str, now: float) -> str:
        return (f"gpuconform: waiting for {terminal_text(self.what)}: {terminal_text(state) or 'no state yet'} "
                f"({max(0.0, self.deadline - now):.0f}s left)")

    def state(self, state: str) -> None:
        now = time.monotonic()
        self.last_state = state
        if now - self.started < self.p.quiet_s:
            return
        if self.p.tty:
            if now - self.shown_at >= 0.5 or state != self.shown_state:
                self.p.write(("\r" if self.shown else "\n") + self._text(state, now)[:self.p.width] + "\033[K")
                self.shown, self.shown_state, self.shown_at = True, state, now
        elif state != self.shown_state or now - self.shown_at >= self.p.every_s:
            self.p.write(self._text(state, now) + "\n")
            self.shown, self.shown_state, self.shown_at = True, state, now

    def end(self, outcome: str) -> None:
        took = time.monotonic() - self.started
        if not self.shown and took < self.p.quiet_s:
            return
        text = f"gpuconform: waited {took:.0f}s for {terminal_text(self.what)}: {terminal_text(outcome)}"
        self.p.write((("\r" if self.shown else "\n") + text[:self.p.width] + "\033[K\n") if self.p.tty else text + "\n")


#: The progress of every wait; the plugin points it at the terminal (around pytest's capture).
progress = Progress.to(sys.stderr)


# -- the wait -----------------------------------------------------------------------------------
def wait_for(what: str, attempt: Callable[[], T | None], *, timeout: float, describe: Callable[[], str],
             interval: float = 1.0, retry_on: tuple[type[BaseException], ...] = (),
             backoff_max: float = 2.0, line: "ProgressLine | None" = None) -> T:
    """``attempt()`` until it returns a truthy result (returned), pausing ``interval`` between
    attempts; an exception of ``retry_on`` is retried after an exponential backoff (0.2 s up to
    ``backoff_max``), any other ends the wait. Past ``timeout`` seconds: :class:`WaitTimeout`
    naming ``what`` and ``describe()`` of the last state seen. ``line``: the wait's progress
    line when the attempt reports states itself (a watch, at each event)."""
    deadline = time.monotonic() + timeout
    line = line or progress.line(what, deadline)
    failures = [0]

    def pause(state: RetryCallState) -> float:
        if state.outcome is not None and state.outcome.failed:
            failures[0] += 1
            wanted = min(0.2 * 2 ** (failures[0] - 1), backoff_max)
        else:
            failures[0] = 0
            wanted = interval
        line.state(describe())
        return max(0.0, min(wanted, deadline - time.monotonic()))

    retrying = Retrying(stop=lambda state: time.monotonic() >= deadline, wait=pause,
                        retry=retry_if_result(lambda result: not result) | retry_if_exception_type(retry_on),
                        retry_error_callback=lambda state: state.outcome.result() if state.outcome else None)
    try:
        result = retrying(attempt)
    except retry_on:  # still failing at the deadline
        result = None
    except Stop:
        line.end(f"stopped: {describe()}")
        raise
    except BaseException as exc:
        line.end(f"ended: {type(exc).__name__}")
        raise
    if not result:
        last = describe()
        line.end(f"timed out: {last}")
        raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last state seen: {last}")
    line.end(f"done: {describe()}")
    return result


def _key(obj: dict) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


def watch_until(cluster: Cluster, what: str, path: str, *, timeout: float,
                condition: Callable[[Objects], T], describe: Callable[[Objects], str],
                query: dict[str, Any] | None = None, since: tuple[Objects, str] | None = None,
                recheck_s: float | None = None) -> T:
    """Watch the collection ``path`` (e.g. ``/api/v1/namespaces/x/pods`` with ``query``
    ``{"fieldSelector": "metadata.name=p"}``) until ``condition(objects)`` is truthy; return it.

    ``condition`` may raise :class:`Stop` for a terminal state. On the deadline raises
    :class:`WaitTimeout` with ``describe(objects)`` of the last objects seen. ``since`` =
    (objects, resourceVersion) starts watching there instead of listing (e.g. right after a
    patch, so that no change made after it can be missed). ``recheck_s``: also evaluate
    ``condition`` that often when nothing changes (conditions that depend on time).
    """
    ApiException = _k8s()[2]
    query = dict(query or {})
    deadline = time.monotonic() + timeout
    seen: Objects = dict(since[0]) if since else {}
    rv: list[str | None] = [since[1] if since else None]

    def one_round() -> T | None:
        """List if needed, then follow the watch until the condition holds or the stream ends."""
        left = deadline - time.monotonic()
        try:
            if rv[0] is None:
                doc = cluster.request("GET", path, query, what=f"listing for {what}",
                                      deadline_s=max(0.001, min(left, cluster.timeout)))
                seen.clear()
                seen.update({_key(o): o for o in doc.get("items", [])})
                rv[0] = doc["metadata"].get("resourceVersion")
                if result := condition(seen):
                    return result
            round_s = min(left, recheck_s or left, PROGRESS_TICK_S)
            for event in cluster.watch(path, {**query, "resourceVersion": rv[0]}, round_s):
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    rv[0] = None  # e.g. 410 Gone: list again
                    raise _Dropped()
                rv[0] = (obj.get("metadata") or {}).get("resourceVersion") or rv[0]
                if event["type"] == "BOOKMARK":
                    continue
                if event["type"] == "DELETED":
                    seen.pop(_key(obj), None)
                else:
                    seen[_key(obj)] = obj
                if result := condition(seen):
                    return result
                line.state(describe(seen))
                if time.monotonic() >= deadline:
                    return None
            return condition(seen) if recheck_s else None
        except ApiException as exc:
            if exc.status != 410 and not transient(exc):
                raise api_error(exc, f"watching for {what}") from None
            rv[0] = None
            raise _Dropped() from None
        except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError, json.JSONDecodeError):
            rv[0] = None  # dropped watch: list again after a short pause
            raise _Dropped() from None

    line = progress.line(what, deadline)
    return wait_for(what, one_round, timeout=timeout, describe=lambda: describe(seen), interval=0.0,
                    retry_on=(_Dropped,), line=line)


def watch_one(cluster: Cluster, what: str, collection: str, *, name: str, timeout: float,
              condition: Callable[[dict | None], T], describe: Callable[[dict | None], str],
              since: dict | None = None, recheck_s: float | None = None) -> T:
    """:func:`watch_until` for the single object ``name`` of ``collection`` (None while it does
    not exist); ``since``: that object as just written (watch from its resourceVersion)."""
    one = lambda objs: next(iter(objs.values()), None)  # noqa: E731
    start = ({_key(since): since}, since["metadata"]["resourceVersion"]) if since else None
    return watch_until(cluster, what, collection, timeout=timeout, since=start, recheck_s=recheck_s,
                       query={"fieldSelector": f"metadata.name={name}"},
                       condition=lambda objs: condition(one(objs)), describe=lambda objs: describe(one(objs)))
