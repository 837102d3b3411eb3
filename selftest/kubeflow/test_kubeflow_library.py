"""The kubeflow library and the web-app stand-in on their own (no dex, no control plane)."""
from __future__ import annotations

import datetime as dt

import pytest
import requests

from gpuconform.kubeflow import login, tls, webapps
from gpuconform.profile import ProfileError, load
from testbed.kubeflow.pki import TestCA
from testbed.kubeflow.webapps import KubeflowWebApps

DEX_PASSWORD_FORM = """<form method="post" action="/dex/auth/local/login?back=&amp;state=abc">
<input tabindex="1" required id="login" name="login" type="text" placeholder="email address" value=""/>
<input tabindex="2" required id="password" name="password" type="password" placeholder="password"/>
<button tabindex="3" id="submit-login" type="submit">Login</button></form>"""
DEX_APPROVAL_FORM = """<form method="post"><input type="hidden" name="req" value="r1"/>
<input type="hidden" name="hmac" value="h1"/>
<button type="submit" name="approval" value="approve">Grant Access</button></form>
<form method="post"><input type="hidden" name="req" value="r1"/>
<button type="submit" name="approval" value="rejected">Cancel</button></form>"""


def test_forms_are_read_like_a_browser():
    pw = login._password_form(login.forms_of(DEX_PASSWORD_FORM))
    assert pw["action"] == "/dex/auth/local/login?back=&state=abc" and pw["types"]["password"] == "password"
    approval = login._approval_form(login.forms_of(DEX_APPROVAL_FORM))
    assert approval["inputs"] == {"req": "r1", "hmac": "h1"} and approval["buttons"]["approval"] == ["approve"]


def test_hostname_matching():
    cert = tls.ServedCertificate("h", 443, "", "", ("*.apps.example.com", "localhost"),
                                 dt.datetime.now(dt.timezone.utc), None)
    assert cert.matches("kubeflow.apps.example.com") and cert.matches("LOCALHOST")
    assert not cert.matches("a.b.apps.example.com") and not cert.matches("apps.example.com")


def test_shape_problems():
    assert webapps.shape_problems({"apiServerReady": False}, ("apiServerReady", "multi_user"),
                                  {"apiServerReady": True}) == ["no key 'multi_user'",
                                                                "apiServerReady is False, expected True"]
    assert webapps.shape_problems("<html>", ("a",), {}) == ["not a JSON object: '<html>'"]


def test_profile_rejects_a_plain_http_kubeflow_url(tmp_path):
    p = tmp_path / "p.yaml"
    p.write_text("name: x\nkubeflow: {url: 'http://kubeflow.example.com'}\n")
    with pytest.raises(ProfileError, match=r"kubeflow\.url: Value error, https://<host>\[:port\]/"):
        load(p)


class _Verifier:
    def claims(self, token: str) -> dict:
        return {"email": token}


@pytest.fixture
def stand_in():
    apps = KubeflowWebApps(_Verifier(), {"a@x": "ns-a", "b@x": "ns-b"}).start()
    yield f"http://127.0.0.1:{apps.port}", apps
    apps.stop()


def test_stand_in_xsrf_rule_and_tenants(stand_in):
    url, _ = stand_in
    s = requests.Session()
    s.headers["Authorization"] = "Bearer a@x"
    nb = f"{url}/jupyter/api/namespaces/ns-a/notebooks"
    assert s.get(nb).json() == {"success": True, "status": 200, "user": "a@x", "notebooks": []}
    assert s.post(nb, json={}).status_code == 403                       # no XSRF cookie
    page = s.get(f"{url}/jupyter/")                                     # sets XSRF-TOKEN (Secure: kept over https only)
    token = page.headers["Set-Cookie"].split(";")[0].split("=", 1)[1]
    s.cookies.set("XSRF-TOKEN", token)                                 # as the browser sends it back
    assert s.post(nb, json={}, headers={"X-XSRF-TOKEN": "wrong"}).status_code == 403
    assert s.post(nb, json={}, headers={"X-XSRF-TOKEN": token}).status_code == 200
    assert s.get(f"{url}/jupyter/api/namespaces/ns-b/notebooks").status_code == 403
    assert requests.get(nb).status_code == 401                          # no identity


def test_served_certificate_reports_chain_and_host(tmp_path):
    import ssl
    import threading
    from http.server import HTTPServer, BaseHTTPRequestHandler
    ca, other = TestCA(tmp_path, "good"), TestCA(tmp_path, "other")
    leaf = other.issue("leaf", ["localhost"], days=3)
    srv = HTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(leaf.cert, leaf.key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        cert = tls.served_certificate("localhost", srv.server_address[1], str(ca.bundle), timeout=10)
    finally:
        srv.shutdown()
        srv.server_close()
    assert cert.chain_error == "unable to get local issuer certificate"
    assert cert.matches("localhost") and 2 < cert.days_left() < 3
