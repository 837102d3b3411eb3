"""Errors of the cluster library. Each one's str() is a single line a user can act on."""
from __future__ import annotations

import json
import re

from gpuconform.errors import CannotTell

#: The API server's 403 message (apiserver endpoints/handlers/responsewriters/errors.go,
#: forbiddenMessage): ``User "u" cannot <verb> resource "<res>[/<sub>]" in API group "<g>"
#: (in the namespace "<ns>" | at the cluster scope)``, or ``cannot <verb> path "<p>"``.
_FORBIDDEN = re.compile(r'User "(?P<user>[^"]*)" cannot (?P<verb>\S+) (?:resource "(?P<resource>[^"]+)" '
                        r'in API group "(?P<group>[^"]*)"(?: in the namespace "(?P<ns>[^"]+)")?|path "(?P<path>[^"]+)")')


class ClusterError(CannotTell):
    """The API server could not answer a question ("could not check", never "failed")."""


class Unreachable(ClusterError):
    """No usable connection: no config, unreachable server, TLS or authentication refused."""


class Forbidden(ClusterError):
    """The credentials are accepted but the server refuses one request (HTTP 403): "could not check",
    str() is ``forbidden: needs <verb> <resource> ...``, the rule to add to the suite's role, when
    RBAC refused it (``by_rbac``); else the refusal of an admission policy or webhook, or of the
    endpoint behind the API server's service proxy, as the server told it."""

    def __init__(self, line: str, by_rbac: bool = True):
        super().__init__(line)
        self.by_rbac = by_rbac


def api_error_line(exc: Exception) -> str:
    """One line for an ApiException / urllib3 error: status, reason and the server's message."""
    status = getattr(exc, "status", None)
    if status is None:
        text = str(exc).strip().splitlines()
        reason = getattr(exc, "reason", None)
        inner = str(reason) if reason is not None else (text[0] if text else "")
        return f"{type(exc).__name__}: {inner}"[:300]
    message = ""
    body = getattr(exc, "body", None)
    if body:
        try:
            message = json.loads(body).get("message", "")
        except (ValueError, AttributeError):
            message = str(body)[:200]
    reason = getattr(exc, "reason", "") or ""
    return f"HTTP {status} {reason}".strip() + (f": {message}" if message else "")


def _server_message(exc: Exception) -> str:
    try:
        return json.loads(getattr(exc, "body", None) or "{}").get("message", "") or ""
    except (ValueError, AttributeError):
        return ""


def forbidden_line(exc: Exception, what: str) -> str:
    """One line for a 403: ``forbidden: needs list nodes (cluster-wide) while <what>; <user> is not
    granted it``; the resource is named as kubectl and RBAC rules name it (``<plural>[.<group>]``,
    ``pods/log``). A 403 that is not RBAC's (an admission policy or webhook) is told as any other
    refusal: ``<what>: HTTP 403 Forbidden: <the server's message>``."""
    m = _FORBIDDEN.search(_server_message(exc))
    if not m:
        return f"{what}: {api_error_line(exc)}"
    if m["path"]:
        needed, scope = f'{m["verb"]} path {m["path"]}', "non-resource URL"
    else:
        resource = m["resource"] + (f'.{m["group"]}' if m["group"] else "")
        needed = f'{m["verb"]} {resource}'
        if not m["ns"]:
            scope = "cluster-wide"
        elif resource == "namespaces":  # a namespace's own namespace is its name
            scope = f'namespace {m["ns"]}'
        else:
            scope = f'in namespace {m["ns"]}'
    return f"forbidden: needs {needed} ({scope}) while {what}; {m['user']} is not granted it"


def request_error_line(exc: Exception, what: str) -> str:
    """The one line for a failed request: a 403 as :func:`forbidden_line`, else
    ``<what>: <api_error_line>``."""
    if getattr(exc, "status", None) == 403:
        return forbidden_line(exc, what)
    return f"{what}: {api_error_line(exc)}"


def api_error(exc: Exception, what: str) -> ClusterError:
    """The error to raise for a refused request: :class:`Forbidden` for a 403, else ClusterError."""
    if getattr(exc, "status", None) == 403:
        return Forbidden(request_error_line(exc, what), by_rbac=_FORBIDDEN.search(_server_message(exc)) is not None)
    return ClusterError(request_error_line(exc, what))
