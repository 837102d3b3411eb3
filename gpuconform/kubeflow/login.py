"""The Kubeflow 1.10 login as a browser does it: oauth2-proxy start, dex's password form, dex's
approval screen when it shows one, oauth2-proxy's callback, the session cookie.

Each hop is recorded (method, path, status, where it redirects: never a query string, cookie or
form value), so the evidence shows the chain and a failure names the step where it broke.
"""
from __future__ import annotations

import dataclasses
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

import requests

from gpuconform.kubeflow.errors import CredentialsRejected, KubeflowError, LoginFailed
from gpuconform.kubeflow.http import new_session, send

#: The login every Kubeflow install from kubeflow/manifests starts with (README v1.10.0).
DEFAULT_USER, DEFAULT_PASSWORD = "user@example.com", "12341234"
REDIRECTS = (301, 302, 303, 307, 308)
MAX_DEX_HOPS = 6


@dataclasses.dataclass(frozen=True)
class Hop:
    step: str
    method: str
    path: str
    status: int
    location: str | None

    def __str__(self) -> str:
        to = f" -> {self.location}" if self.location else ""
        return f"{self.step:<24} {self.method:<4} {self.path} {self.status}{to}"


@dataclasses.dataclass
class Login:
    """A finished login: the session (cookies) and how it got there."""
    username: str
    session: requests.Session
    hops: list[Hop]
    approval_shown: bool
    cookie_names: tuple[str, ...]

    def trail(self) -> str:
        return "\n".join(str(h) for h in self.hops)


class _Forms(HTMLParser):
    """The <form>s of a page: action, method and the inputs (name -> value, type)."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form":
            self.forms.append({"action": a.get("action") or "", "method": (a.get("method") or "get").lower(),
                               "inputs": {}, "types": {}, "buttons": {}})
        elif tag in ("input", "button") and self.forms and a.get("name"):
            form = self.forms[-1]
            kind = (a.get("type") or ("submit" if tag == "button" else "text")).lower()
            if kind == "submit":
                form["buttons"][a["name"]] = form["buttons"].get(a["name"], []) + [a.get("value") or ""]
            else:
                form["inputs"][a["name"]] = a.get("value") or ""
                form["types"][a["name"]] = kind


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style", "title")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style", "title") and self._skip > 0

    def handle_data(self, data):
        if not self._skip and data.strip():
            self.parts.append(" ".join(data.split()))


def page_text(html: str, limit: int = 200) -> str:
    """The visible text of an error page, on one line (dex: "Bad Request Unregistered redirect_uri ...")."""
    parser = _Text()
    parser.feed(html)
    text = " ".join(parser.parts)
    return text[:limit] or "an empty page"


def forms_of(html: str) -> list[dict]:
    parser = _Forms()
    parser.feed(html)
    return parser.forms


def _path(url: str) -> str:
    """Path of a URL without its query (which carries state, codes and PKCE values)."""
    return urlsplit(url).path or "/"


def _password_form(forms: list[dict]) -> dict | None:
    return next((f for f in forms if "password" in f["types"].values()), None)


def _approval_form(forms: list[dict]) -> dict | None:
    return next((f for f in forms if "approval" in f["buttons"] or "approval" in f["inputs"]), None)


class _Flow:
    def __init__(self, base_url: str, verify: str | bool, timeout: float):
        self.base = base_url.rstrip("/") + "/"
        self.session = new_session(verify)
        self.timeout = timeout
        self.hops: list[Hop] = []

    def hop(self, step: str, method: str, url: str, **kwargs) -> requests.Response:
        try:
            r = send(self.session, method, url, what=f"{method} {_path(url)}", timeout=self.timeout, **kwargs)
        except KubeflowError as exc:
            if not self.hops:  # the endpoint itself does not answer: "could not check", not a login failure
                raise
            raise LoginFailed(step, str(exc)) from None
        location = r.headers.get("Location")
        self.hops.append(Hop(step, method, _path(url), r.status_code, _path(location) if location else None))
        return r

    def next_url(self, r: requests.Response) -> str:
        return urljoin(r.url, r.headers["Location"])


def login(base_url: str, username: str, password: str, *, cookie_name: str,
          verify: str | bool = True, timeout: float = 15) -> Login:
    """Log in at ``base_url`` through oauth2-proxy and dex; raises :class:`LoginFailed`
    (:class:`CredentialsRejected` for a wrong username/password) naming the failing step, or
    :class:`KubeflowError` when ``base_url`` itself cannot be reached."""
    f = _Flow(base_url, verify, timeout)
    # 1. oauth2-proxy starts the OIDC flow: a redirect to dex's authorization endpoint
    r = f.hop("oauth2-proxy start", "GET", urljoin(f.base, "oauth2/start?rd=%2F"))
    if r.status_code not in REDIRECTS:
        raise LoginFailed("oauth2-proxy start", f"GET /oauth2/start answered HTTP {r.status_code}, "
                                                f"expected a redirect to dex")
    url = f.next_url(r)
    # 2. dex: /dex/auth -> /dex/auth/local -> the password form
    for _ in range(MAX_DEX_HOPS):
        r = f.hop("dex authorization", "GET", url)
        if r.status_code in REDIRECTS:
            url = f.next_url(r)
            continue
        break
    else:
        raise LoginFailed("dex authorization", f"more than {MAX_DEX_HOPS} redirects from {_path(url)}")
    if r.status_code != 200:
        why = ("is dex running and routed at /dex/?" if r.status_code >= 500
               else f"dex says: {page_text(r.text)}")
        raise LoginFailed("dex authorization", f"GET {_path(url)} answered HTTP {r.status_code} ({why})")
    form = _password_form(forms_of(r.text))
    if form is None:
        raise LoginFailed("dex login form", f"GET {_path(url)} shows no password form")
    # 3. the credentials
    fields = dict(form["inputs"])
    login_field = next((n for n, t in form["types"].items() if t in ("text", "email")), "login")
    password_field = next(n for n, t in form["types"].items() if t == "password")
    fields.update({login_field: username, password_field: password})
    r = f.hop("dex credentials", "POST", urljoin(r.url, form["action"]) if form["action"] else r.url, data=fields)
    # dex shows the form again: HTTP 401 (dex v2.41.1, measured), 200 in older releases
    if r.status_code in (200, 401) and _password_form(forms_of(r.text)) is not None:
        raise CredentialsRejected(username)
    if r.status_code not in REDIRECTS:
        raise LoginFailed("dex credentials", f"POST answered HTTP {r.status_code}, expected a redirect")
    url = f.next_url(r)
    # 4. the approval screen (skipApprovalScreen: false): approve, as a user would
    approval_shown = False
    if _path(url).endswith("/approval"):
        approval_shown = True
        r = f.hop("dex approval", "GET", url)
        form = _approval_form(forms_of(r.text)) if r.status_code == 200 else None
        if form is None:
            raise LoginFailed("dex approval", f"GET {_path(url)} answered HTTP {r.status_code} without an approval form")
        fields = {**form["inputs"], "approval": "approve"}
        r = f.hop("dex approval", "POST", urljoin(r.url, form["action"]) if form["action"] else r.url, data=fields)
        if r.status_code not in REDIRECTS:
            raise LoginFailed("dex approval", f"POST answered HTTP {r.status_code}, expected a redirect")
        url = f.next_url(r)
    if not _path(url).endswith("/oauth2/callback"):
        raise LoginFailed("dex redirect", f"dex sent the browser to {_path(url)}, expected /oauth2/callback")
    # 5. oauth2-proxy redeems the code and sets the session cookie
    r = f.hop("oauth2-proxy callback", "GET", url)
    if r.status_code not in REDIRECTS:
        raise LoginFailed("oauth2-proxy callback", f"GET /oauth2/callback answered HTTP {r.status_code} "
                                                   f"(code not redeemed at dex?)")
    names = tuple(sorted({c.name for c in f.session.cookies}))
    session_names = tuple(n for n in names if n == cookie_name or n.startswith(f"{cookie_name}_")
                          and n[len(cookie_name) + 1:].isdigit())
    if not session_names:
        raise LoginFailed("session cookie", f"no cookie {cookie_name} after the callback "
                                            f"(cookies set: {', '.join(names) or 'none'})")
    # 6. the landing page with the session
    r = f.hop("landing page", "GET", f.next_url(r))
    if r.status_code != 200:
        raise LoginFailed("landing page", f"GET {_path(r.url)} with the session answered HTTP {r.status_code}")
    return Login(username, f.session, f.hops, approval_shown, session_names)


def anonymous_get(base_url: str, path: str, *, verify: str | bool = True, timeout: float = 15,
                  json_request: bool = False) -> requests.Response:
    """``GET path`` without cookies or credentials, as a fresh browser (or script) sends it."""
    headers = {"Accept": "application/json"} if json_request else {"Accept": "text/html"}
    return send(new_session(verify), "GET", urljoin(base_url.rstrip("/") + "/", path.lstrip("/")),
                what=f"GET {path}", timeout=timeout, headers=headers)
