"""The kubeflow library and the web-app stand-in on their own (no dex, no control plane)."""
from __future__ import annotations

import ast
import datetime as dt

import pytest
import requests

from pathlib import Path

from gpuconform import tls
from gpuconform.kubeflow import login, webapps
from gpuconform.profile import KUBEFLOW_110_COMPONENTS, ProfileError, load
from testbed.kubeflow.k8s_objects import MANIFESTS_V1_10_2, manifests_workloads
from testbed.kubeflow.pki import TestCA
from testbed.kubeflow.webapps import KubeflowWebApps

REPO = Path(__file__).resolve().parents[2]

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
    # plain http here: the XSRF cookie without Secure, as upstream's APP_SECURE_COOKIES=false gives it
    apps = KubeflowWebApps(_Verifier(), {"a@x": "ns-a", "b@x": "ns-b"}, secure_cookies=False).start()
    yield f"http://127.0.0.1:{apps.port}", apps
    apps.stop()


def _user_session(user: str) -> requests.Session:
    s = requests.Session()
    s.headers["Authorization"] = f"Bearer {user}"
    return s


CRUD = {"/jupyter": "/jupyter/api/namespaces/ns-a/notebooks", "/volumes": "/volumes/api/namespaces/ns-a/pvcs",
        "/tensorboards": "/tensorboards/api/namespaces/ns-a/tensorboards"}


def test_stand_in_sets_the_xsrf_cookie_like_the_crud_backend():
    """Each app's page sets XSRF-TOKEN with Path=<app prefix>, SameSite=Strict, Secure (the
    manifests' APP_SECURE_COOKIES=true), not HttpOnly, uncached."""
    apps = KubeflowWebApps(_Verifier(), {"a@x": "ns-a"}).start()
    try:
        for prefix in CRUD:
            r = _user_session("a@x").get(f"http://127.0.0.1:{apps.port}{prefix}/")
            attrs = [a.strip() for a in r.headers["Set-Cookie"].split(";")]
            assert attrs[0].startswith("XSRF-TOKEN=") and len(attrs[0]) > 40
            assert set(attrs[1:]) == {f"Path={prefix}", "SameSite=Strict", "Secure"}
            assert "no-store" in r.headers["Cache-Control"]
    finally:
        apps.stop()


def test_stand_in_xsrf_only_on_unsafe_methods_and_tenants(stand_in):
    url, _ = stand_in
    s = _user_session("a@x")
    nb = f"{url}{CRUD['/jupyter']}"
    assert s.get(nb).json() == {"success": True, "status": 200, "user": "a@x", "notebooks": []}  # GET: no token
    assert s.post(nb, json={}).json()["log"] == "CSRF protection: no XSRF-TOKEN cookie"
    s.get(f"{url}/jupyter/")                                            # the page sets XSRF-TOKEN
    assert s.post(nb, json={}).json()["log"] == "CSRF protection: no X-XSRF-TOKEN header"
    assert s.post(nb, json={}, headers={"X-XSRF-TOKEN": "wrong"}).status_code == 403
    token = s.cookies.get("XSRF-TOKEN", path="/jupyter")
    assert s.post(nb, json={}, headers={"X-XSRF-TOKEN": token}).status_code == 200
    assert s.delete(f"{url}/jupyter/api/anything").status_code == 403  # checked before routing, any route
    assert s.get(f"{url}/jupyter/api/namespaces/ns-b/notebooks").status_code == 403
    assert requests.get(nb).status_code == 401                          # no identity


def test_several_xsrf_cookies_in_one_session(stand_in):
    """Finding 4: a session that opened the three crud apps holds three XSRF-TOKEN cookies; a
    plain lookup by name raises CookieConflictError, the library takes each app's own."""
    url, _ = stand_in
    s = _user_session("a@x")
    for prefix in CRUD:
        s.get(f"{url}{prefix}/")
    assert sorted(c.path for c in s.cookies if c.name == "XSRF-TOKEN") == ["/jupyter", "/tensorboards", "/volumes"]
    with pytest.raises(requests.cookies.CookieConflictError):
        s.cookies.get("XSRF-TOKEN")
    for prefix, path in CRUD.items():
        assert webapps.xsrf_token(s, path) == s.cookies.get("XSRF-TOKEN", path=prefix)
        got = webapps.request_json(s, url, path, timeout=5)
        assert (got.status, got.xsrf, got.body["success"]) == (200, False, True), got.excerpt()
        posted = webapps.request_json(s, url, path, timeout=5, method="POST", body={})
        assert (posted.status, posted.xsrf) == (200, True), posted.excerpt()
    # another app's token does not open this one: the cookie sent to /volumes is /volumes' own
    foreign = s.post(f"{url}{CRUD['/volumes']}", json={},
                     headers={"X-XSRF-TOKEN": s.cookies.get("XSRF-TOKEN", path="/jupyter")})
    assert foreign.status_code == 403


def test_unsafe_request_loads_the_app_page_for_its_token(stand_in):
    url, _ = stand_in
    s = _user_session("a@x")
    posted = webapps.request_json(s, url, CRUD["/volumes"], timeout=5, method="POST", body={}, xsrf_page="/volumes/")
    assert (posted.status, posted.xsrf) == (200, True), posted.excerpt()
    assert "POST /volumes/api/namespaces/ns-a/pvcs -> HTTP 200 (with X-XSRF-TOKEN)" in posted.excerpt()
    assert s.cookies.get("XSRF-TOKEN", path="/volumes") not in posted.excerpt()


def test_xsrf_token_prefers_the_most_specific_path():
    s = requests.Session()
    s.cookies.set("XSRF-TOKEN", "root", path="/")
    s.cookies.set("XSRF-TOKEN", "volumes", path="/volumes")
    assert webapps.xsrf_token(s, "/volumes/api/namespaces/x/pvcs") == "volumes"
    assert webapps.xsrf_token(s, "/jupyter/api/namespaces/x/notebooks") == "root"
    assert webapps.xsrf_token(s, "/volumesx/api") == "root"             # a path prefix is not a directory prefix
    assert webapps.xsrf_token(requests.Session(), "/volumes/") is None


def test_profile_kubeflow_defaults(tmp_path):
    """Finding 5 and 7 in the profile: kubeadm's group may hold cluster-admin; no Ingress is
    expected unless declared (the article's profile declares it); 1.10.2's components expected."""
    p = tmp_path / "p.yaml"
    p.write_text("name: x\n")
    kf = load(p).profile.kubeflow
    assert kf.ingress is None
    assert set(kf.cluster_admin_subjects) == {"Group:system:masters", "Group:kubeadm:cluster-admins",
                                              "ServiceAccount:kubeflow:profiles-controller-service-account"}
    assert {"spark-operator-controller", "spark-operator-webhook",
            "kserve-localmodel-controller-manager"} <= set(kf.components["kubeflow"])
    article = load(REPO / "profiles" / "seed-h100.yaml").profile.kubeflow
    assert (article.ingress.namespace, article.ingress.name) == ("istio-system", "ingress-kubeflow")
    assert "Group:kubeadm:cluster-admins" in article.cluster_admin_subjects


def test_suite_components_match_the_beds_upstream_facts():
    """The suite's expected workloads and the bed's list, written apart (the bed from
    kubeflow/manifests v1.10.2 files, each cited), agree; the bed does not read the suite's."""
    bed = manifests_workloads()
    assert {ns: set(names) for ns, names in bed.items()} == \
        {ns: set(names) for ns, names in KUBEFLOW_110_COMPONENTS.items()}
    tree = ast.parse((REPO / "testbed" / "kubeflow" / "k8s_objects.py").read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
        a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert not {m for m in imported if m and m.startswith("gpuconform")}, imported
    assert all(path.endswith(".yaml") for path, _ns, _names in MANIFESTS_V1_10_2)


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
