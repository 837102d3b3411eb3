"""Connecting: an unreachable or unauthorised API server, a refused certificate, a server that
does not speak TLS, or no kubeconfig at all, gives one clear line at once or within the
profile's timeout; an API server that stops answering costs one timeout; every other cluster
check is then "blocked"."""
from __future__ import annotations

import http.server
import json
import re
import ssl
import threading
import time
from pathlib import Path

import pytest
import yaml

from cluster_harness import PROFILE, by_check
from testbed.ports import free_port  # a port nothing listens on

REACHABLE = ("cluster.api.reachable", None)


def _kubeconfig(platform, tmp_path, *, server: str | None = None, token: str | None = None):
    doc = yaml.safe_load(platform.kubeconfig.read_text())
    if server:
        doc["clusters"][0]["cluster"]["server"] = server
    if token:
        doc["users"][0]["user"] = {"token": token}
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(doc))
    return path


def _assert_one_line_and_blocked(proc, results, text):
    r = results[REACHABLE]
    assert r["verdict"] == "fail" and text in r["message"] and "\n" not in r["message"], r["message"]
    others = {k: r["verdict"] for k, r in results.items() if k != REACHABLE}
    assert others and set(others.values()) == {"blocked"}, others
    assert all(r["blocked_by"] == "cluster.api.reachable" for k, r in results.items() if k != REACHABLE)
    assert "Traceback" not in proc.stdout + proc.stderr


def test_unreachable_server_within_timeout(platform, run_cluster, profile_with, tmp_path):
    kubeconfig = _kubeconfig(platform, tmp_path, server=f"https://127.0.0.1:{free_port()}")
    profile = profile_with({"cluster": {"timeouts": {"api_s": 3}}})
    t0 = time.monotonic()
    proc, results = run_cluster(kubeconfig=kubeconfig, profile=profile)
    elapsed = time.monotonic() - t0
    _assert_one_line_and_blocked(proc, results, "unreachable")
    assert "Connection refused" in results[REACHABLE]["message"]
    assert elapsed < 3 + 20, f"took {elapsed:.0f}s"  # the 3 s budget plus pytest's own start-up


def test_unauthorised_credentials(platform, run_cluster, tmp_path):
    kubeconfig = _kubeconfig(platform, tmp_path, token="not-a-valid-token")
    proc, results = run_cluster(kubeconfig=kubeconfig)
    _assert_one_line_and_blocked(proc, results, "refused our credentials")
    assert "HTTP 401 Unauthorized" in results[REACHABLE]["message"]


def test_missing_kubeconfig_option_is_bad_input(tmp_path):
    """--kubeconfig naming no file is bad input: one line, exit 4, before anything runs."""
    from runner import run_suite
    missing = tmp_path / "nope.kubeconfig"
    proc, doc = run_suite("-m", "cluster", f"--kubeconfig={missing}", report_dir=tmp_path / "reports", timeout=60)
    assert proc.returncode == 4 and doc is None, proc.stdout[-2000:] + proc.stderr
    assert proc.stderr.strip() == f"ERROR: {missing}: cannot read kubeconfig (--kubeconfig): No such file or directory"


def test_missing_kubeconfig_from_the_environment(tmp_path):
    """$KUBECONFIG naming no file: cluster.api.reachable fails with one line, the rest is blocked."""
    from runner import run_suite
    proc, doc = run_suite("-m", "cluster", "-q", report_dir=tmp_path / "reports", timeout=120,
                          env={"KUBECONFIG": str(tmp_path / "nope.kubeconfig")})
    assert doc is not None, proc.stdout[-3000:] + proc.stderr
    results = {(r["check_id"], r["param"]): r for r in doc["results"]}
    _assert_one_line_and_blocked(proc, results, "cannot load cluster config")


def test_context_option(platform, tmp_path):
    """--context picks a kubeconfig context; one that does not exist is bad input (issue 28): one
    line naming it and the contexts there are, exit 4, nothing run (not a cluster that fails)."""
    from runner import run_suite
    proc, doc = run_suite("-m", "cluster", "-q", f"--kubeconfig={platform.kubeconfig}", "--context=no-such-context",
                          report_dir=tmp_path / "reports", timeout=120)
    assert proc.returncode == 4 and doc is None, proc.stdout[-3000:] + proc.stderr
    assert proc.stderr.strip() == (f"ERROR: --context=no-such-context: no such context in {platform.kubeconfig} "
                                   f"(its contexts: gpuconform-testbed)"), proc.stderr


def test_in_cluster_service_account(platform, tmp_path):
    """Run as a pod would: no kubeconfig, KUBERNETES_SERVICE_HOST/PORT and a service account
    token + CA in the service account folder (a real token from the API server's TokenRequest)."""
    import base64
    from urllib.parse import urlparse

    from kubernetes import client

    from runner import run_suite

    core, rbac = client.CoreV1Api(platform.api), client.RbacAuthorizationV1Api(platform.api)
    name = "gpuconform-selftest-incluster"
    core.create_namespaced_service_account("default", {"metadata": {"name": name}})
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]})
    try:
        token = core.create_namespaced_service_account_token(
            name, "default", {"spec": {"expirationSeconds": 3600}}).status.token
        kube = yaml.safe_load(platform.kubeconfig.read_text())["clusters"][0]["cluster"]
        sa = tmp_path / "serviceaccount"
        sa.mkdir()
        (sa / "token").write_text(token)
        ca = kube.get("certificate-authority-data")
        (sa / "ca.crt").write_bytes(base64.b64decode(ca) if ca else
                                    (platform.kubeconfig.parent / kube["certificate-authority"]).read_bytes())
        server = urlparse(kube["server"])
        proc, doc = run_suite("-m", "cluster", "-q", "-k", "reachable", report_dir=tmp_path / "reports",
                              env={"KUBECONFIG": "", "HOME": str(tmp_path), "KUBERNETES_SERVICE_HOST": server.hostname,
                                   "KUBERNETES_SERVICE_PORT": str(server.port),
                                   "GPUCONFORM_SERVICEACCOUNT_DIR": str(sa)})
        assert doc, proc.stdout[-3000:]
        r = next(x for x in doc["results"] if x["check_id"] == "cluster.api.reachable")
        assert r["verdict"] == "pass", r["message"]
        # no kubeconfig anywhere (KUBECONFIG empty, HOME without .kube): only the service account can have worked
        assert all(token not in f.read_text() for f in (tmp_path / "reports").iterdir() if f.is_file())
    finally:
        rbac.delete_cluster_role_binding(name)
        core.delete_namespaced_service_account(name, "default")


# -- refusals and a stalled server, against API servers of our own on loopback ------------------
# (no control plane needed: each is an http.server answering as the API server would)

class _ApiServer(http.server.BaseHTTPRequestHandler):
    """Answers /version; everything else: ``server.mode`` "answer", "hang" (until the test
    ends), "die" (the server stops at the first such request: later connections are refused, as
    of a killed kube-apiserver) or "unauthorized" (every path, as an API server refusing the token)."""

    def do_GET(self):
        mode = self.server.mode
        if mode == "unauthorized":
            return self._json(401, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                    "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
        if self.path.split("?")[0] == "/version":
            return self._json(200, {"major": "1", "minor": "35", "gitVersion": "v1.35.8"})
        if mode == "hang":
            self.server.release.wait(120)
            return None
        if mode == "die":
            server = self.server
            threading.Thread(target=lambda: (server.shutdown(), server.server_close()), daemon=True).start()
            self.close_connection = True
            return None
        return self._json(404, {"kind": "Status", "message": "not found", "code": 404})

    def _json(self, status: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def api_server():
    """``api_server(mode, cert=None)``: an API server stand-in on 127.0.0.1 (HTTPS with ``cert``,
    else plain HTTP); returns its port. Stopped after the test."""
    servers = []

    def start(mode: str, cert=None) -> int:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _ApiServer)
        server.daemon_threads = True
        server.mode, server.release = mode, threading.Event()
        if cert is not None:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(cert.cert, cert.key)
            server.socket = ctx.wrap_socket(server.socket, server_side=True)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return server.server_address[1]
    yield start
    for server in servers:
        server.release.set()
        server.shutdown()
        server.server_close()


def _loopback_kubeconfig(tmp_path, port: int, ca) -> Path:
    path = tmp_path / "loopback.kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "loopback",
        "clusters": [{"name": "loopback", "cluster": {"server": f"https://127.0.0.1:{port}",
                                                      "certificate-authority": str(ca.bundle)}}],
        "users": [{"name": "selftest", "user": {"token": "selftest-token"}}],
        "contexts": [{"name": "loopback", "context": {"cluster": "loopback", "user": "selftest"}}]}))
    return path


def _cluster_layer(tmp_path, kubeconfig: Path, api_s: float):
    from runner import run_suite
    doc = yaml.safe_load(PROFILE.read_text())
    doc["cluster"]["timeouts"]["api_s"] = api_s
    profile = tmp_path / "profile.yaml"
    profile.write_text(yaml.safe_dump(doc))
    t0 = time.monotonic()
    proc, report = run_suite("-m", "cluster", "-q", f"--profile={profile}", f"--kubeconfig={kubeconfig}",
                             report_dir=tmp_path / "reports", timeout=300)
    assert report, proc.stdout[-3000:] + proc.stderr[-2000:]
    return proc, by_check(report), time.monotonic() - t0


REFUSALS = {  # case: (server certificate: issuer, names, days valid; or None for plain HTTP), mode, message
    "expired": (("ours", ["127.0.0.1"], -3), "answer", r"the API server's certificate expired on \d{4}-\d\d-\d\d \d\d:\d\d UTC"),
    "another-ca": (("other", ["127.0.0.1"], 30), "answer",
                   r"the API server's certificate is not signed by the configured CA \(CA does not match; "
                   r"it is issued by CN=gpuconform other CA"),
    "wrong-host": (("ours", ["api.elsewhere.example"], 30), "answer",
                   r"the API server's certificate is not valid for host 127\.0\.0\.1; it names api\.elsewhere\.example"),
    "plain-http": (None, "answer", r"https://127\.0\.0\.1:\d+ does not speak TLS: it answers plain HTTP"),
    "unauthorized": (("ours", ["127.0.0.1"], 30), "unauthorized", r"refused our credentials .*HTTP 401 Unauthorized"),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_refusal_answered_at_once_with_its_cause(case, api_server, tmp_path):
    """A certificate or credentials the API server's side refuses: cluster.api.reachable fails
    at once (not retried for api_s) naming the cause, not "unreachable"; the rest is blocked."""
    from testbed.kubeflow.pki import TestCA
    cert_spec, mode, message = REFUSALS[case]
    cas = {"ours": TestCA(tmp_path / "pki", "ours"), "other": TestCA(tmp_path / "pki", "other")}
    cert = None
    if cert_spec:
        issuer, names, days = cert_spec
        cert = cas[issuer].issue("apiserver", names, days=days)
    port = api_server(mode, cert)
    api_s = 60
    proc, results, elapsed = _cluster_layer(tmp_path, _loopback_kubeconfig(tmp_path, port, cas["ours"]), api_s)
    _assert_one_line_and_blocked(proc, results, "")
    got = results[REACHABLE]["message"]
    assert re.search(message, got) and "unreachable" not in got, got
    assert elapsed < 25, f"took {elapsed:.0f} s: retried instead of answered at once (api_s {api_s})"


def test_stalled_server_costs_one_deadline(api_server, tmp_path):
    """An API server that answers /version and hangs on everything else: the whole cluster layer
    gives up within about api_s (not one api_s per request), each check failed or blocked with
    the cause."""
    from testbed.kubeflow.pki import TestCA
    ca = TestCA(tmp_path / "pki", "ours")
    port = api_server("hang", ca.issue("apiserver", ["127.0.0.1"]))
    api_s = 4
    proc, results, elapsed = _cluster_layer(tmp_path, _loopback_kubeconfig(tmp_path, port, ca), api_s)
    cause = f"stopped answering: no answer to GET /api/v1/nodes within {api_s} s (cluster.timeouts.api_s)"
    _assert_one_line_and_blocked(proc, results, cause)
    assert all(cause in r["message"] for r in results.values()), {k: r["message"] for k, r in results.items()}
    assert elapsed < api_s + 20, f"the cluster layer took {elapsed:.0f} s with api_s {api_s}"


def test_dead_server_costs_one_deadline(api_server, tmp_path):
    """Issue 28: an API server killed after the first contact (connections refused from then on):
    the cluster layer gives up within about one api_s, not one api_s per check."""
    from testbed.kubeflow.pki import TestCA
    ca = TestCA(tmp_path / "pki", "ours")
    port = api_server("die", ca.issue("apiserver", ["127.0.0.1"]))
    api_s = 6
    proc, results, elapsed = _cluster_layer(tmp_path, _loopback_kubeconfig(tmp_path, port, ca), api_s)
    given_up = [r for r in results.values() if "given up for the run" in r["message"]]
    assert given_up, {k: r["message"] for k, r in results.items()}
    assert elapsed < api_s + 20, f"the cluster layer took {elapsed:.0f} s with api_s {api_s}"


def test_lists_are_read_in_pages_on_the_real_server(platform, monkeypatch):
    """The real API server's paging (issue #27): two nodes a request, every GPU worker once, in the
    server's order, without managedFields; one request a page."""
    from gpuconform.cluster import connect
    cluster = connect.connect(str(platform.kubeconfig), timeout=30)
    whole = cluster.get_json("/api/v1/nodes")["items"]
    assert len(whole) >= 3 and all(n["metadata"].get("managedFields") for n in whole)
    monkeypatch.setattr(connect, "LIST_PAGE", 2)
    before = cluster.request_count
    paged = cluster.list_items("/api/v1/nodes")
    assert [n["metadata"]["name"] for n in paged] == [n["metadata"]["name"] for n in whole]
    assert not any("managedFields" in n["metadata"] for n in paged)
    assert cluster.request_count - before == -(-len(whole) // 2)
