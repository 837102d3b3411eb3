"""The one wait helper of the cluster library: list, then watch, until a condition holds or a
deadline passes. Transient API errors (dropped watch, 429/5xx, refused connection) restart the
list+watch; a timeout says what was awaited and the last state seen."""
from __future__ import annotations

import json
import time
from typing import Any, Callable, TypeVar

import urllib3

from gpuconform.cluster.connect import Cluster, _k8s, transient
from gpuconform.cluster.errors import api_error

T = TypeVar("T")
Objects = dict[str, dict]


class WaitTimeout(Exception):
    """What was awaited did not happen in time; str() names it and the last state seen."""


class Stop(Exception):
    """Raised by a condition to end the wait at once: a terminal state that will not change."""


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
    objects: Objects = dict(since[0]) if since else {}
    rv: str | None = since[1] if since else None
    backoff = 0.2
    while (left := deadline - time.monotonic()) > 0:
        try:
            if rv is None:
                doc = cluster.request("GET", path, query, what=f"listing for {what}",
                                      deadline_s=min(left, cluster.timeout))
                objects = {_key(o): o for o in doc.get("items", [])}
                rv = doc["metadata"].get("resourceVersion")
                if result := condition(objects):
                    return result
            for event in cluster.watch(path, {**query, "resourceVersion": rv}, min(left, recheck_s or left)):
                obj = event.get("object") or {}
                if event.get("type") == "ERROR":
                    rv = None  # e.g. 410 Gone: list again
                    break
                rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
                if event["type"] == "BOOKMARK":
                    continue
                if event["type"] == "DELETED":
                    objects.pop(_key(obj), None)
                else:
                    objects[_key(obj)] = obj
                if result := condition(objects):
                    return result
                if time.monotonic() >= deadline:
                    break
            else:
                if recheck_s and (result := condition(objects)):
                    return result
        except ApiException as exc:
            if exc.status != 410 and not transient(exc):
                raise api_error(exc, f"watching for {what}") from None
            rv = None
        except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError, json.JSONDecodeError):
            rv = None  # dropped watch: list again after a short pause
            time.sleep(min(backoff, max(0.0, deadline - time.monotonic())))
            backoff = min(backoff * 2, 2.0)
    raise WaitTimeout(f"timed out after {timeout:.0f}s waiting for {what}; last state seen: {describe(objects)}")


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
