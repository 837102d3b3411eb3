"""Connecting: an unreachable or unauthorised API server, or no kubeconfig at all, gives one
clear line within the profile's timeout; every other cluster check is then "blocked"."""
from __future__ import annotations

import socket
import time

import yaml

REACHABLE = ("cluster.api.reachable", None)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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
    kubeconfig = _kubeconfig(platform, tmp_path, server=f"https://127.0.0.1:{_closed_port()}")
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


def test_context_option(platform, run_cluster):
    """--context picks a kubeconfig context; one that does not exist is one line, not a traceback."""
    proc, results = run_cluster("-k", "test_api", "--context=no-such-context")
    _assert_one_line_and_blocked(proc, results, "cannot load cluster config")
    assert "no-such-context" in results[REACHABLE]["message"]


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
