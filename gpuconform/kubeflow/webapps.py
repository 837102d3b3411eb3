"""The Kubeflow web apps' JSON endpoints, asked with a logged-in session.

The crud web apps (Jupyter, volumes, tensorboards) set an ``XSRF-TOKEN`` cookie on their page
and refuse state-changing requests whose ``X-XSRF-TOKEN`` header does not repeat it; this
client fetches the page first and always sends the header, as the Angular front end does.
"""
from __future__ import annotations

import dataclasses
import json
from urllib.parse import urljoin

import requests

from gpuconform.kubeflow.http import send

XSRF_COOKIE, XSRF_HEADER = "XSRF-TOKEN", "X-XSRF-TOKEN"


@dataclasses.dataclass(frozen=True)
class Answer:
    path: str
    status: int
    body: object            # parsed JSON, or the text when it is not JSON
    xsrf: bool              # an XSRF token was sent

    def is_json_object(self) -> bool:
        return isinstance(self.body, dict)

    def excerpt(self, limit: int = 600) -> str:
        text = json.dumps(self.body, indent=1, sort_keys=True) if not isinstance(self.body, str) else self.body
        return f"GET {self.path} -> HTTP {self.status}{' (with X-XSRF-TOKEN)' if self.xsrf else ''}\n{text[:limit]}"


def get_json(session: requests.Session, base_url: str, path: str, *, timeout: float,
             xsrf_from: str | None = None) -> Answer:
    """``GET path`` as the logged-in user; with ``xsrf_from``, first load that page for the
    XSRF cookie and send it back in the header."""
    base = base_url.rstrip("/") + "/"
    headers = {"Accept": "application/json"}
    if xsrf_from:
        send(session, "GET", urljoin(base, xsrf_from.lstrip("/")), what=f"GET {xsrf_from}", timeout=timeout)
        token = session.cookies.get(XSRF_COOKIE)
        if token:
            headers[XSRF_HEADER] = token
    r = send(session, "GET", urljoin(base, path.lstrip("/")), what=f"GET {path}", timeout=timeout, headers=headers)
    try:
        body = r.json()
    except ValueError:
        body = r.text[:2000]
    return Answer(path, r.status_code, body, XSRF_HEADER in headers)


def shape_problems(body: object, keys: tuple[str, ...], equals: dict) -> list[str]:
    """What is wrong with a JSON answer against the expected top-level keys and values."""
    if not isinstance(body, dict):
        return [f"not a JSON object: {str(body)[:120]!r}"]
    problems = [f"no key {k!r}" for k in keys if k not in body]
    problems += [f"{k} is {body.get(k)!r}, expected {v!r}" for k, v in equals.items() if k in body and body[k] != v]
    return problems
