"""Stand-in for the Kubeflow web endpoints behind the gateway (written for this project).

It plays what istio and the Kubeflow apps do with a request oauth2-proxy let through: the user
is the ``email`` claim of the dex ID token in ``Authorization: Bearer`` (signature checked
against dex's JWKS, issuer, audience and expiry checked), as istio's RequestAuthentication
`dex-jwt` turns it into ``kubeflow-userid``. Endpoints, with the shapes of Kubeflow 1.10:

* central dashboard: ``/``, ``/api/workgroup/env-info``, ``/api/workgroup/exists``,
  ``/api/dashboard-links``; other ``/api/*`` -> 404 JSON;
* pipelines: ``/pipeline/apis/v2beta1/healthz``;
* crud web apps (``/jupyter``, ``/volumes``, ``/tensorboards``), as their common backend does
  (``CrudApp`` below, with the upstream files it follows): any page sets an ``XSRF-TOKEN``
  cookie scoped to the app's prefix; an unsafe method needs ``X-XSRF-TOKEN`` equal to it (403
  otherwise), a safe one needs nothing; ``GET|POST /<app>/api/namespaces/<ns>/<kind>`` answer
  the owner of ``<ns>`` and 403 anyone else.

Faults (attributes, changed while it runs): ``fail_prefixes`` (paths answering 500),
``open_tenants`` (every user may read every namespace).
"""
from __future__ import annotations

import base64
import dataclasses
import json
import re
import secrets
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa


@dataclasses.dataclass(frozen=True)
class CrudApp:
    """One crud web app as kubeflow/manifests v1.10.2 deploys it: its ``APP_PREFIX``
    (``applications/jupyter/jupyter-web-app/upstream/base/params.env`` JWA_PREFIX=/jupyter,
    ``applications/volumes-web-app/upstream/base/params.env`` VWA_PREFIX=/volumes,
    ``applications/tensorboard/tensorboards-web-app/upstream/base/params.env`` TWA_PREFIX=/tensorboards)
    and the resource its list endpoint answers."""
    prefix: str
    kind: str


CRUD_APPS = (CrudApp("/jupyter", "notebooks"), CrudApp("/volumes", "pvcs"), CrudApp("/tensorboards", "tensorboards"))
_CRUD_LIST = re.compile(r"^/api/namespaces/([^/]+)/([^/]+)$")
# kubeflow/kubeflow components/crud-web-apps/common/backend/kubeflow/kubeflow/crud_backend/csrf.py:
# the check is skipped for these methods and applied, before routing, to every other one.
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})
XSRF_COOKIE, XSRF_HEADER = "XSRF-TOKEN", "X-XSRF-TOKEN"
LINKS = {"menuLinks": [{"icon": "book", "link": "/jupyter/", "text": "Notebooks", "type": "item"},
                       {"icon": "device:storage", "link": "/volumes/", "text": "Volumes", "type": "item"},
                       {"icon": "kubeflow:pipeline-centered", "link": "/pipeline/#/pipelines",
                        "text": "Pipelines", "type": "item"}],
         "externalLinks": [], "documentationItems": [], "quickLinks": []}


def _b64(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


class TokenVerifier:
    """RS256 ID tokens of one dex issuer, keys fetched from its JWKS (again on an unknown kid)."""

    def __init__(self, issuer: str, jwks_url: str, audience: str):
        self.issuer, self.jwks_url, self.audience = issuer, jwks_url, audience
        self._keys: dict[str, rsa.RSAPublicKey] = {}
        self._lock = threading.Lock()

    def _refresh(self) -> None:
        with urllib.request.urlopen(self.jwks_url, timeout=5) as resp:
            doc = json.load(resp)
        keys = {}
        for k in doc.get("keys", []):
            if k.get("kty") == "RSA":
                n, e = (int.from_bytes(_b64(k[x]), "big") for x in ("n", "e"))
                keys[k.get("kid", "")] = rsa.RSAPublicNumbers(e, n).public_key()
        self._keys = keys

    def claims(self, token: str) -> dict:
        """The verified claims; ValueError says why a token is refused."""
        try:
            head_b64, body_b64, sig_b64 = token.split(".")
            head, body = json.loads(_b64(head_b64)), json.loads(_b64(body_b64))
        except (ValueError, json.JSONDecodeError):
            raise ValueError("not a JWT") from None
        if head.get("alg") != "RS256":
            raise ValueError(f"algorithm {head.get('alg')} not accepted")
        with self._lock:
            if head.get("kid") not in self._keys:
                self._refresh()
            key = self._keys.get(head.get("kid"))
        if key is None:
            raise ValueError("unknown signing key")
        try:
            key.verify(_b64(sig_b64), f"{head_b64}.{body_b64}".encode(), padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            raise ValueError("bad signature") from None
        aud = body.get("aud")
        if body.get("iss") != self.issuer or self.audience not in (aud if isinstance(aud, list) else [aud]):
            raise ValueError("wrong issuer or audience")
        if body.get("exp", 0) < time.time():
            raise ValueError("expired")
        return body


class KubeflowWebApps:
    """The stand-in server on 127.0.0.1 (a free port), in a thread of the calling process."""

    def __init__(self, verifier: TokenVerifier, namespaces: dict[str, str], *, version: str = "1.10.0",
                 secure_cookies: bool = True):
        self.verifier, self.namespaces, self.version = verifier, dict(namespaces), version
        self.fail_prefixes: set[str] = set()
        self.open_tenants = False
        # APP_SECURE_COOKIES (true in the manifests' params.env): the XSRF cookie is Secure
        self.secure_cookies = secure_cookies
        handler = type("Handler", (_Handler,), {"apps": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, name="kubeflow-webapps", daemon=True)

    def start(self) -> "KubeflowWebApps":
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def may_read(self, user: str, namespace: str) -> bool:
        return self.open_tenants or self.namespaces.get(user) == namespace


class _Handler(BaseHTTPRequestHandler):
    apps: KubeflowWebApps
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # quiet: the tests read answers, not access logs
        pass

    def _send(self, status: int, body, content_type: str = "application/json", cookies: tuple[str, ...] = (),
              extra_headers: dict[str, str] | None = None) -> None:
        data = (json.dumps(body) if content_type == "application/json" else body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for c in cookies:
            self.send_header("Set-Cookie", c)
        for k, v in (extra_headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _user(self) -> str | None:
        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer "):
            return None
        try:
            return self.apps.verifier.claims(auth[7:]).get("email")
        except ValueError:
            return None

    def _cookie(self, name: str) -> str | None:
        """The first cookie of that name, as Flask's ``request.cookies[name]`` takes it (a browser
        sends the one with the longest path first)."""
        for part in self.headers.get("Cookie", "").split(";"):
            k, _, v = part.strip().partition("=")
            if k == name:
                return v
        return None

    def do_GET(self):
        self._route("GET")

    def do_HEAD(self):
        self._route("HEAD")

    def do_POST(self):
        self._route("POST")

    def do_PUT(self):
        self._route("PUT")

    def do_PATCH(self):
        self._route("PATCH")

    def do_DELETE(self):
        self._route("DELETE")

    def _route(self, method: str) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))  # keep-alive: never leave a body behind
        path = self.path.split("?", 1)[0]
        if any(path.startswith(p) for p in self.apps.fail_prefixes):
            return self._send(500, {"success": False, "status": 500, "log": "Internal Server Error (testbed fault)"})
        user = self._user()
        if user is None:  # istio's RequestAuthentication would not have set kubeflow-userid
            return self._send(401, {"success": False, "status": 401, "log": "no identity (kubeflow-userid)"})
        app = next((a for a in CRUD_APPS if path == a.prefix or path.startswith(a.prefix + "/")), None)
        if app is not None:
            return self._crud_app(method, user, app, path[len(app.prefix):] or "/")
        if method == "GET" and path in ("/", "/_/"):
            return self._send(200, "<html><title>Kubeflow Central Dashboard</title></html>", "text/html")
        if method == "GET" and path == "/pipeline/apis/v2beta1/healthz":
            return self._send(200, {"apiServerCommitHash": "testbed", "apiServerTagName": "2.4.1",
                                    "apiServerMultiUser": True, "multi_user": True, "apiServerReady": True,
                                    "buildDate": "testbed", "frontendCommitHash": "testbed",
                                    "frontendTagName": "2.4.1"})
        if method == "GET" and path == "/api/workgroup/env-info":
            ns = self.apps.namespaces.get(user)
            return self._send(200, {
                "user": user, "isClusterAdmin": False,
                "namespaces": [{"namespace": ns, "role": "owner", "user": user}] if ns else [],
                "platform": {"provider": "other://", "providerName": "other",
                             "kubeflowVersion": self.apps.version, "logoutUrl": "/oauth2/sign_out"}})
        if method == "GET" and path == "/api/workgroup/exists":
            return self._send(200, {"hasAuth": True, "user": user, "hasWorkgroup": user in self.apps.namespaces,
                                    "registrationFlowAllowed": False})
        if method == "GET" and path == "/api/dashboard-links":
            return self._send(200, LINKS)
        if path.startswith("/api/"):
            return self._send(404, {"error": "Could not find the route you're looking for"})
        return self._send(404, "not found", "text/plain")

    def _crud_app(self, method: str, user: str, app: CrudApp, sub_path: str) -> None:
        """One crud web app; ``sub_path`` is the path below its prefix (istio's VirtualService
        rewrites ``<prefix>/`` to ``/`` for the backend)."""
        # csrf.py check_endpoint: unsafe methods need the cookie, the header, and both equal;
        # otherwise Forbidden (403), whatever the route.
        if method not in SAFE_METHODS:
            cookie, header = self._cookie(XSRF_COOKIE), self.headers.get(XSRF_HEADER)
            why = ("no XSRF-TOKEN cookie" if cookie is None else "no X-XSRF-TOKEN header" if header is None
                   else "X-XSRF-TOKEN differs from the XSRF-TOKEN cookie" if header != cookie else None)
            if why:
                return self._send(403, {"success": False, "status": 403, "log": f"CSRF protection: {why}"})
        m = _CRUD_LIST.match(sub_path)
        if m:
            return self._crud_list(method, user, app, m.group(1), m.group(2))
        if sub_path.startswith("/api/"):
            return self._send(404, {"success": False, "status": 404, "log": "not found"})
        if method in ("GET", "HEAD"):
            return self._index(app)
        return self._send(405, {"success": False, "status": 405, "log": "method not allowed"})

    def _index(self, app: CrudApp) -> None:
        """Every page of the app is its index.html, served uncached with a fresh XSRF cookie:
        readable by the front end (no HttpOnly), Secure when APP_SECURE_COOKIES, SameSite=Strict
        (CSRF_SAMESITE's default), Path=<APP_PREFIX>. Behaviour read in kubeflow/kubeflow
        components/crud-web-apps/common/backend/kubeflow/kubeflow/crud_backend/serving.py
        (serve_index) and csrf.py (set_cookie); the prefix is the config PREFIX that
        components/crud-web-apps/volumes/backend/entrypoint.py takes from APP_PREFIX."""
        cookie = f"{XSRF_COOKIE}={secrets.token_urlsafe(32)}; Path={app.prefix}; SameSite=Strict"
        if self.apps.secure_cookies:
            cookie += "; Secure"
        self._send(200, f"<html><title>{app.prefix.strip('/')}</title></html>", "text/html", (cookie,),
                   extra_headers={"Cache-Control": "no-cache, no-store, must-revalidate, max-age=0"})

    def _crud_list(self, method: str, user: str, app: CrudApp, namespace: str, kind: str) -> None:
        if kind != app.kind or method not in ("GET", "POST"):
            return self._send(404, {"success": False, "status": 404, "log": "not found"})
        if not self.apps.may_read(user, namespace):
            return self._send(403, {"success": False, "status": 403, "user": user,
                                    "log": f"User '{user}' is not authorized to list {kind} for namespace: {namespace}"})
        if method == "POST":
            return self._send(200, {"success": True, "status": 200, "user": user, "message": "created (testbed)"})
        return self._send(200, {"success": True, "status": 200, "user": user, kind: []})
