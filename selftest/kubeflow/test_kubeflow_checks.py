"""The kubeflow layer against real dex and oauth2-proxy (testbed/kubeflow): every check passes
on the good bed and each fault fails its check with a message naming the cause."""
from __future__ import annotations

import pytest
import requests

from gpuconform.kubeflow import login, webapps
from gpuconform.kubeflow.http import send
from runner import run_suite
from testbed.kubeflow.stack import COOKIE, DEFAULT_PASSWORD

LOGIN_ONLY = "test_login or test_env_info_user"


def test_good_bed_passes_everything(run_kubeflow, kubeflow_bed):
    res = run_kubeflow()
    bad = {k: v for k, v in res.verdicts().items() if v != "pass"}
    assert not bad, f"{bad}\n{[(r['check_id'], r['message']) for r in res.results if r['verdict'] != 'pass']}"
    assert len(res.results) >= 60
    # what kubeflow/manifests v1.10.2 deploys beyond 1.10.0 is checked, and found
    for new_in_1_10_2 in ("spark-operator-controller", "spark-operator-webhook", "kserve-localmodel-controller-manager"):
        assert res.one("kubeflow.components.available", f"kubeflow/{new_in_1_10_2}")["verdict"] == "pass"
    # the article's profile declares its Ingress: checked and found
    assert res.one("kubeflow.ingress.routes")["verdict"] == "pass"
    # kubeadm's binding of its admin group is on the bed and allowed
    admin = res.one("kubeflow.security.cluster_admin")
    assert "Group:kubeadm:cluster-admins: kubeadm:cluster-admins" in admin["evidence"], admin["evidence"]
    login = res.one("kubeflow.login.session")
    assert "session cookie(s): oauth2_proxy_kubeflow" in login["evidence"]
    assert "dex credentials" in login["evidence"] and "oauth2-proxy callback" in login["evidence"]
    # no secret reaches the reports: passwords, the session cookie value, the ID token
    text = res.text()
    for secret in (*kubeflow_bed.env.values(), DEFAULT_PASSWORD):
        assert secret not in text
    assert "eyJ" not in text


def test_article_platform_accepted_by_cluster_and_kubeflow_layers(kubeflow_bed, tmp_path):
    """The article's platform -- NVIDIA's GPU Operator reconciled by its real controller, the
    Kubeflow install behind real dex and oauth2-proxy -- is ACCEPTED by both layers in one run."""
    profile = kubeflow_bed.profile(tmp_path / "profile.yaml")
    proc, doc = run_suite("-m", "cluster or kubeflow", "-q", f"--profile={profile}",
                          f"--kubeconfig={kubeflow_bed.cluster.kubeconfig}", report_dir=tmp_path / "reports",
                          timeout=600, env=kubeflow_bed.env)
    assert doc is not None, proc.stdout[-3000:]
    bad = [(r["check_id"], r["param"], r["verdict"], r["message"]) for r in doc["results"]
           if r["verdict"] in ("fail", "error", "blocked")]
    assert not bad, bad
    assert doc["verdict"]["word"] == "ACCEPTED" and proc.returncode == 0, (doc["verdict"], proc.stdout[-2000:])
    layers = {r["check_id"].split(".")[0] for r in doc["results"]}
    assert layers == {"cluster", "kubeflow"}


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
    assert admin["message"].startswith("cluster-admin also held by ServiceAccount:ml-platform:platform-controller "
                                       "(binding ml-platform-cluster-admin), expected only "), admin["message"]
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


def test_kubeadm_admin_group_passes_with_the_default_subjects(run_kubeflow, kubeflow_bed):
    """Finding 5: kubeadm (>= 1.29) binds group kubeadm:cluster-admins to cluster-admin; the
    profile's default allowed subjects accept it (the bed carries that binding as kubeadm writes it)."""
    binding = kubeflow_bed.objects.rbac.read_cluster_role_binding("kubeadm:cluster-admins")
    assert [(s.kind, s.name) for s in binding.subjects] == [("Group", "kubeadm:cluster-admins")]
    res = run_kubeflow(k="test_cluster_admin_subjects", cluster_admin_subjects=None)
    admin = res.one("kubeflow.security.cluster_admin")
    assert admin["verdict"] == "pass", admin["message"]
    assert "Group:kubeadm:cluster-admins: kubeadm:cluster-admins" in admin["evidence"]
    assert "Group:system:masters: cluster-admin" in admin["evidence"]


def test_missing_spark_operator_is_named(run_kubeflow, fault):
    """Finding 7: a component 1.10.2 deploys (the Spark operator, new in v1.10.1's example) is
    not deployed: its check fails naming it, its siblings pass."""
    fault.component_gone("kubeflow", "spark-operator-controller")
    res = run_kubeflow(k="test_component_available")
    gone = res.one("kubeflow.components.available", "kubeflow/spark-operator-controller")
    assert (gone["verdict"], gone["message"]) == (
        "fail", "Deployment/spark-operator-controller not found in namespace kubeflow, expected all replicas available")
    for sibling in ("spark-operator-webhook", "kserve-localmodel-controller-manager"):
        assert res.one("kubeflow.components.available", f"kubeflow/{sibling}")["verdict"] == "pass"
    assert [k for k, v in res.verdicts().items() if v != "pass"] == [
        "kubeflow.components.available[kubeflow/spark-operator-controller]"]


def test_ingress_is_checked_only_when_the_profile_declares_it(run_kubeflow, fault):
    """Finding 7: no Ingress, as an install from kubeflow/manifests' example has: with the default
    profile (no kubeflow.ingress) nothing fails; with the article's profile, which declares
    ingress-kubeflow, both Ingress checks fail."""
    fault.ingress_gone()
    default = run_kubeflow(k="test_ingress", ingress=None)
    for check_id in ("kubeflow.ingress.routes", "kubeflow.ingress.tls_host"):
        r = default.one(check_id)
        assert r["verdict"] == "skip" and "declares no kubeflow.ingress" in r["message"], r
    article = run_kubeflow(k="test_ingress")
    for check_id in ("kubeflow.ingress.routes", "kubeflow.ingress.tls_host"):
        r = article.one(check_id)
        assert (r["verdict"], r["message"]) == (
            "fail", "Ingress istio-system/ingress-kubeflow not found, expected it (kubeflow.ingress declares it)"), r


def test_web_apps_through_the_gateway_with_several_xsrf_cookies(kubeflow_bed):
    """Finding 4 through real oauth2-proxy: after the user opened the three crud apps the session
    holds three XSRF-TOKEN cookies (Path=/jupyter, /volumes, /tensorboards); the library's GETs
    need none of them, its POSTs send each app's own and pass, a POST without it gets 403."""
    first = kubeflow_bed.users[0]
    url, ca = kubeflow_bed.stack.url, str(kubeflow_bed.stack.ca.bundle)
    session = login.login(url, first.email, first.password, cookie_name=COOKIE, verify=ca).session
    apps = {"/jupyter": "notebooks", "/volumes": "pvcs", "/tensorboards": "tensorboards"}
    for prefix in apps:
        assert send(session, "GET", f"{url}{prefix}/", what=prefix, timeout=15).status_code == 200
    assert sorted(c.path for c in session.cookies if c.name == "XSRF-TOKEN") == sorted(apps)
    with pytest.raises(requests.cookies.CookieConflictError):
        session.cookies.get("XSRF-TOKEN")
    for prefix, kind in apps.items():
        path = f"{prefix}/api/namespaces/{first.namespace}/{kind}"
        got = webapps.request_json(session, url, path, timeout=15)
        assert (got.status, got.xsrf) == (200, False), got.excerpt()
        posted = webapps.request_json(session, url, path, timeout=15, method="POST", body={})
        assert (posted.status, posted.xsrf) == (200, True), posted.excerpt()
        bare = send(session, "POST", f"{url}{path}", what=path, timeout=15, json={})
        assert bare.status_code == 403, bare.text


def test_profiles_are_written_as_upstream_and_read_as_v1(kubeflow_bed):
    """The bed writes Profiles as kubeflow/manifests does (kubeflow.org/v1beta1); the CRD serves
    v1 too, which the suite reads."""
    first = kubeflow_bed.users[0]
    custom = kubeflow_bed.objects.custom
    for version in ("v1beta1", "v1"):
        obj = custom.get_cluster_custom_object("kubeflow.org", version, "profiles", first.namespace)
        assert (obj["apiVersion"], obj["spec"]["owner"]) == (f"kubeflow.org/{version}", {"kind": "User", "name": first.email})
