"""Errors of the cluster library. Each one's str() is a single line a user can act on."""
from __future__ import annotations

import json

from gpuconform.node.facts import CannotTell


class ClusterError(CannotTell):
    """The API server could not answer a question ("could not check", never "failed")."""


class Unreachable(ClusterError):
    """No usable connection: no config, unreachable server, TLS or authentication refused."""


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
