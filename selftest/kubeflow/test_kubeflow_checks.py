"""The kubeflow layer against real dex and oauth2-proxy (testbed/kubeflow): every check passes
on the good bed and each fault fails its check with a message naming the cause."""
from __future__ import annotations

import pytest

from testbed.kubeflow.stack import DEFAULT_PASSWORD

LOGIN_ONLY = "test_login or test_env_info_user"


def test_good_bed_passes_everything(run_kubeflow, kubeflow_bed):
    res = run_kubeflow()
    bad = {k: v for k, v in res.verdicts().items() if v != "pass"}
    assert not bad, f"{bad}\n{[(r['check_id'], r['message']) for r in res.results if r['verdict'] != 'pass']}"
    assert len(res.results) >= 60
    login = res.one("kubeflow.login.session")
    assert "session cookie(s): oauth2_proxy_kubeflow" in login["evidence"]
    assert "dex credentials" in login["evidence"] and "oauth2-proxy callback" in login["evidence"]
    # no secret reaches the reports: passwords, the session cookie value, the ID token
    text = res.text()
    for secret in (*kubeflow_bed.env.values(), DEFAULT_PASSWORD):
        assert secret not in text
    assert "eyJ" not in text


def test_wrong_password_is_named(run_kubeflow):
    res = run_kubeflow(k=LOGIN_ONLY, env={"GPUCONFORM_KUBEFLOW_PASSWORD": "not-the-password"})
    login = res.one("kubeflow.login.session")
    assert (login["verdict"], login["message"]) == ("fail", "dex rejected the credentials for user@example.com")
    assert res.one("kubeflow.identity.user")["verdict"] == "blocked"


def test_missing_password_names_the_variable(run_kubeflow):
    res = run_kubeflow(k="test_login", env={"GPUCONFORM_KUBEFLOW_PASSWORD": ""})
    login = res.one("kubeflow.login.session")
    assert login["verdict"] == "fail" and "$GPUCONFORM_KUBEFLOW_PASSWORD" in login["message"], login["message"]


def test_dex_down_names_the_step(run_kubeflow, fault):
    fault.dex_down()
    res = run_kubeflow(k=LOGIN_ONLY)
    login = res.one("kubeflow.login.session")
    assert login["verdict"] == "fail"
    assert login["message"].startswith("login step 'dex authorization' failed: GET /dex/auth answered HTTP 502"), login["message"]


def test_broken_redirect_chain_names_the_step(run_kubeflow, fault):
    fault.stack(dex_redirect_uri="/authservice/oidc/callback")  # the dex client of an older Kubeflow
    res = run_kubeflow(k=LOGIN_ONLY)
    login = res.one("kubeflow.login.session")
    assert login["verdict"] == "fail"
    assert login["message"].startswith("login step 'dex authorization' failed: GET /dex/auth/local answered HTTP 400"
                                       " (dex says: "), login["message"]
    assert "Unregistered redirect_uri" in login["message"], login["message"]


def test_cookie_name_changed(run_kubeflow, fault):
    fault.stack(cookie_name="_oauth2_proxy")
    res = run_kubeflow(k=LOGIN_ONLY)
    login = res.one("kubeflow.login.session")
    assert login["verdict"] == "fail"
    assert login["message"].startswith("login step 'session cookie' failed: no cookie oauth2_proxy_kubeflow"), login["message"]
    assert "_oauth2_proxy" in login["message"]


def test_approval_screen_is_handled(run_kubeflow, fault):
    fault.stack(skip_approval=False)
    res = run_kubeflow(k=LOGIN_ONLY)
    login = res.one("kubeflow.login.session")
    assert login["verdict"] == "pass", login["message"]
    assert "approval screen: shown and approved" in login["evidence"]
    assert "dex approval" in login["evidence"]
    assert res.one("kubeflow.identity.user")["verdict"] == "pass"


@pytest.mark.parametrize("cert, check_id, words", [
    ("other-ca", "kubeflow.tls.trusted", "does not verify: unable to get local issuer certificate"),
    ("other-host", "kubeflow.tls.hostname", "certificate names kubeflow.other.example, expected localhost"),
])
def test_tls_faults(run_kubeflow, fault, cert, check_id, words):
    fault.stack(cert=cert)
    res = run_kubeflow(k="tls or test_login")
    r = res.one(check_id)
    assert r["verdict"] == "fail" and words in r["message"], r["message"]
    others = {k: v for k, v in res.verdicts().items() if k.startswith("kubeflow.tls.") and k != check_id}
    assert set(others.values()) == {"pass"}, others
    if cert == "other-ca":
        assert res.one("kubeflow.login.session")["verdict"] == "blocked"


def test_expiring_certificate_warns(run_kubeflow, fault):
    fault.stack(cert="expiring")
    res = run_kubeflow(k="tls")
    r = res.one("kubeflow.tls.expiry")
    assert r["verdict"] == "pass", r["message"]
    assert "WARNING" in r["evidence"] and "under the profile's warning threshold of 14 days" in r["evidence"]
    assert "CertificateExpiresSoon" in res.proc.stdout


def test_expired_certificate_fails(run_kubeflow, fault):
    fault.stack(cert="expired")
    res = run_kubeflow(k="tls or test_login")
    r = res.one("kubeflow.tls.expiry")
    assert r["verdict"] == "fail" and r["message"].startswith("certificate expired on"), r["message"]
    assert res.one("kubeflow.tls.trusted")["verdict"] == "fail"  # an expired certificate does not verify


def test_component_answering_500_and_open_tenants(run_kubeflow, fault):
    fault.webapps(fail_prefixes={"/pipeline/"}, open_tenants=True)
    res = run_kubeflow(k="test_web_app_answers or test_second_user_forbidden")
    pipelines = res.one("kubeflow.webapp.answers", "pipelines")
    assert pipelines["verdict"] == "fail"
    assert pipelines["message"].startswith("GET /pipeline/apis/v2beta1/healthz answered HTTP 500"), pipelines["message"]
    assert res.one("kubeflow.webapp.answers", "notebooks")["verdict"] == "pass"
    tenant = res.one("kubeflow.security.tenant_isolation")
    assert tenant["verdict"] == "fail"
    assert tenant["message"].startswith("user2@example.com got HTTP 200 on /jupyter/api/namespaces/kubeflow-user-example-com"), tenant["message"]


def test_default_password_in_production(run_kubeflow, fault):
    fault.stack(first_user_password=DEFAULT_PASSWORD)
    res = run_kubeflow(k="test_default_login_rejected or test_login",
                       env={"GPUCONFORM_KUBEFLOW_PASSWORD": DEFAULT_PASSWORD})
    r = res.one("kubeflow.security.default_login_rejected")
    assert r["verdict"] == "fail"
    assert r["message"].startswith("user@example.com with the default password logged in"), r["message"]
    assert res.one("kubeflow.login.session")["verdict"] == "pass"
    assert DEFAULT_PASSWORD not in res.text()


def test_default_password_allowed_outside_production(run_kubeflow, fault):
    """The article's own setup: default login, platform not marked production."""
    fault.stack(first_user_password=DEFAULT_PASSWORD)
    res = run_kubeflow(k="test_default_login_rejected or test_login", production=False,
                       env={"GPUCONFORM_KUBEFLOW_PASSWORD": DEFAULT_PASSWORD})
    assert res.one("kubeflow.security.default_login_rejected")["verdict"] == "skip"
    assert res.one("kubeflow.login.session")["verdict"] == "pass"


def test_cluster_side_faults(run_kubeflow, fault):
    fault.extra_cluster_admin()
    fault.issuer_not_ready()
    fault.component_gone("kubeflow", "centraldashboard")
    fault.ingress_elsewhere()
    res = run_kubeflow(k="test_cluster_admin_subjects or test_issuer_ready or test_component_available or test_ingress")
    admin = res.one("kubeflow.security.cluster_admin")
    assert admin["verdict"] == "fail"
    assert "ServiceAccount:ml-platform:platform-controller (binding ml-platform-cluster-admin)" in admin["message"]
    issuer = res.one("kubeflow.certmanager.issuer_ready")
    assert (issuer["verdict"], issuer["message"].split(" (")[0]) == (
        "fail", "ClusterIssuer kubeflow-self-signing-issuer Ready=False"), issuer["message"]
    gone = res.one("kubeflow.components.available", "kubeflow/centraldashboard")
    assert gone["verdict"] == "fail"
    assert gone["message"].startswith("Deployment/centraldashboard not found in namespace kubeflow"), gone["message"]
    assert res.one("kubeflow.components.available", "auth/dex")["verdict"] == "pass"
    routes = res.one("kubeflow.ingress.routes")
    assert routes["verdict"] == "fail" and "('centraldashboard', 8082)" in routes["message"], routes["message"]
    assert "expected {'class': 'nginx', 'backends': [('istio-ingressgateway', 80)]}" in routes["message"]
    tls_host = res.one("kubeflow.ingress.tls_host")
    assert (tls_host["verdict"], tls_host["message"]) == ("fail", "TLS hosts none, expected localhost")


def test_password_from_a_file(run_kubeflow, kubeflow_bed, tmp_path):
    secret = tmp_path / "kubeflow-password"
    secret.write_text(kubeflow_bed.env["GPUCONFORM_KUBEFLOW_PASSWORD"] + "\n")
    first = kubeflow_bed.users[0]
    res = run_kubeflow(k=LOGIN_ONLY, env={"GPUCONFORM_KUBEFLOW_PASSWORD": ""},
                       account={"username": first.email, "namespace": first.namespace,
                                "password_env": None, "password_file": str(secret)})
    assert res.one("kubeflow.login.session")["verdict"] == "pass"
    assert kubeflow_bed.env["GPUCONFORM_KUBEFLOW_PASSWORD"] not in res.text()
