"""The Kubeflow web apps' JSON endpoints, asked with a logged-in session.

The crud web apps (Jupyter, volumes, tensorboards) guard only unsafe methods against request
forgery: their page sets an ``XSRF-TOKEN`` cookie scoped to the app's own path (``Path=/jupyter``,
``/volumes``, ``/tensorboards``), and a POST/PUT/PATCH/DELETE must repeat it in ``X-XSRF-TOKEN``;
GET needs neither. A session that opened several apps therefore holds several ``XSRF-TOKEN``
cookies: the one to send is the one whose path covers the request, the most specific first, as a
browser orders them.
"""
from __future__ import annotations

import dataclasses
import json
from urllib.parse import urljoin, urlsplit

import requests

from gpuconform.kubeflow.http import send

XSRF_COOKIE, XSRF_HEADER = "XSRF-TOKEN", "X-XSRF-TOKEN"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


@dataclasses.dataclass(frozen=True)
class Answer:
    method: str
    path: str
    status: int
    body: object            # parsed JSON, or the text when it is not JSON
    xsrf: bool              # an XSRF token was sent

    def is_json_object(self) -> bool:
        return isinstance(self.body, dict)

    def excerpt(self, limit: int = 600) -> str:
        text = json.dumps(self.body, indent=1, sort_keys=True) if not isinstance(self.body, str) else self.body
        return (f"{self.method} {self.path} -> HTTP {self.status}{' (with X-XSRF-TOKEN)' if self.xsrf else ''}\n"
                f"{text[:limit]}")


def _path_matches(cookie_path: str, request_path: str) -> bool:
    """RFC 6265 path-match: the cookie path is the request path or a directory prefix of it."""
    base = (cookie_path or "/").rstrip("/")
    return request_path == base or request_path.startswith(base + "/")


def xsrf_token(session: requests.Session, request_path: str) -> str | None:
    """The ``XSRF-TOKEN`` a browser would send with ``request_path``: of the session's cookies of
    that name whose path covers it, the one with the longest path (None when there is none)."""
    scoped = [c for c in session.cookies if c.name == XSRF_COOKIE and _path_matches(c.path, request_path)]
    return max(scoped, key=lambda c: len(c.path or "/")).value if scoped else None


def request_json(session: requests.Session, base_url: str, path: str, *, timeout: float, method: str = "GET",
                 xsrf_page: str | None = None, body: object = None) -> Answer:
    """``method path`` as the logged-in user. An unsafe method first loads ``xsrf_page`` (the
    app's page, which sets its XSRF cookie) when given, and sends the token scoped to ``path``
    in ``X-XSRF-TOKEN``; a safe method sends no token."""
    base = base_url.rstrip("/") + "/"
    method = method.upper()
    headers = {"Accept": "application/json"}
    if method not in SAFE_METHODS:
        if xsrf_page:
            send(session, "GET", urljoin(base, xsrf_page.lstrip("/")), what=f"GET {xsrf_page}", timeout=timeout)
        token = xsrf_token(session, urlsplit(urljoin(base, path.lstrip("/"))).path)
        if token:
            headers[XSRF_HEADER] = token
    r = send(session, method, urljoin(base, path.lstrip("/")), what=f"{method} {path}", timeout=timeout,
             headers=headers, **({"json": body} if body is not None else {}))
    try:
        parsed = r.json()
    except ValueError:
        parsed = r.text[:2000]
    return Answer(method, path, r.status_code, parsed, XSRF_HEADER in headers)


def shape_problems(body: object, keys: tuple[str, ...], equals: dict) -> list[str]:
    """What is wrong with a JSON answer against the expected top-level keys and values."""
    if not isinstance(body, dict):
        return [f"not a JSON object: {str(body)[:120]!r}"]
    problems = [f"no key {k!r}" for k in keys if k not in body]
    problems += [f"{k} is {body.get(k)!r}, expected {v!r}" for k, v in equals.items() if k in body and body[k] != v]
    return problems
