"""Stand-in for the Kubeflow web endpoints behind the gateway (written for this project).

It plays what istio and the Kubeflow apps do with a request oauth2-proxy let through: the user
is the ``email`` claim of the dex ID token in ``Authorization: Bearer`` (signature checked
against dex's JWKS, issuer, audience and expiry checked), as istio's RequestAuthentication
`dex-jwt` turns it into ``kubeflow-userid``. Endpoints, with the shapes of Kubeflow 1.10:

* central dashboard: ``/``, ``/api/workgroup/env-info``, ``/api/workgroup/exists``,
  ``/api/dashboard-links``; other ``/api/*`` -> 404 JSON;
* pipelines: ``/pipeline/apis/v2beta1/healthz``;
* crud web apps (``/jupyter``, ``/volumes``, ``/tensorboards``): the page sets ``XSRF-TOKEN``;
  ``GET|POST /<app>/api/namespaces/<ns>/<kind>`` answer the owner of ``<ns>`` and 403 anyone
  else; POST needs ``X-XSRF-TOKEN`` equal to the cookie (else 403), as crud_backend's csrf does.

Faults (attributes, changed while it runs): ``fail_prefixes`` (paths answering 500),
``open_tenants`` (every user may read every namespace).
"""
from __future__ import annotations

import base64
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

CRUD_APPS = {"jupyter": "notebooks", "volumes": "pvcs", "tensorboards": "tensorboards"}
_CRUD = re.compile(r"^/(jupyter|volumes|tensorboards)/api/namespaces/([^/]+)/(notebooks|pvcs|tensorboards)$")
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

    def __init__(self, verifier: TokenVerifier, namespaces: dict[str, str], *, version: str = "1.10.0"):
        self.verifier, self.namespaces, self.version = verifier, dict(namespaces), version
        self.fail_prefixes: set[str] = set()
        self.open_tenants = False
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

    def _send(self, status: int, body, content_type: str = "application/json", cookies: tuple[str, ...] = ()) -> None:
        data = (json.dumps(body) if content_type == "application/json" else body).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for c in cookies:
            self.send_header("Set-Cookie", c)
        self.end_headers()
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
        for part in self.headers.get("Cookie", "").split(";"):
            k, _, v = part.strip().partition("=")
            if k == name:
                return v
        return None

    def do_GET(self):
        self._route("GET")

    def do_POST(self):
        self._route("POST")

    def _route(self, method: str) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))  # keep-alive: never leave a body behind
        path = self.path.split("?", 1)[0]
        if any(path.startswith(p) for p in self.apps.fail_prefixes):
            return self._send(500, {"success": False, "status": 500, "log": "Internal Server Error (testbed fault)"})
        user = self._user()
        if user is None:  # istio's RequestAuthentication would not have set kubeflow-userid
            return self._send(401, {"success": False, "status": 401, "log": "no identity (kubeflow-userid)"})
        if method == "GET" and path in ("/", "/_/"):
            return self._send(200, "<html><title>Kubeflow Central Dashboard</title></html>", "text/html")
        if method == "GET" and path.rstrip("/") in {f"/{a}" for a in CRUD_APPS}:
            token = secrets.token_urlsafe(16)
            return self._send(200, f"<html><title>{path.strip('/')}</title></html>", "text/html",
                              (f"XSRF-TOKEN={token}; Path=/; Secure; SameSite=Strict",))
        m = _CRUD.match(path)
        if m:
            return self._crud(method, user, m.group(1), m.group(2), m.group(3))
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

    def _crud(self, method: str, user: str, app: str, namespace: str, kind: str) -> None:
        if kind != CRUD_APPS[app]:
            return self._send(404, {"success": False, "status": 404, "log": "not found"})
        if method != "GET":
            cookie, header = self._cookie("XSRF-TOKEN"), self.headers.get("X-XSRF-TOKEN")
            if not cookie:
                return self._send(403, {"success": False, "status": 403,
                                        "log": "Could not find CSRF cookie XSRF-TOKEN in the request."})
            if header != cookie:
                return self._send(403, {"success": False, "status": 403,
                                        "log": "CSRF check failed. Token in cookie XSRF-TOKEN doesn't match "
                                               "token in header X-XSRF-TOKEN."})
        if not self.apps.may_read(user, namespace):
            return self._send(403, {"success": False, "status": 403, "user": user,
                                    "log": f"User '{user}' is not authorized to list {kind} for namespace: {namespace}"})
        if method == "POST":
            return self._send(200, {"success": True, "status": 200, "user": user, "message": "created (testbed)"})
        return self._send(200, {"success": True, "status": 200, "user": user, kind: []})
