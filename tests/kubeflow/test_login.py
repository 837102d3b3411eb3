"""A data scientist logs in through dex and lands in their own profile."""
from gpuconform.checks import check
from gpuconform.kubeflow import objects, webapps
from gpuconform.kubeflow.errors import LoginFailed
from gpuconform.report.record import note_platform

LOGIN_FIX = ("check dex (kubectl -n auth logs deploy/dex) and oauth2-proxy (kubectl -n oauth2-proxy logs "
             "deploy/oauth2-proxy); the account's password in the variable/file named by kubeflow.account; "
             "cookie_name and redirect_url in oauth2_proxy.cfg; the dex client's redirectURIs")


@check("kubeflow.login.session", "The configured account logs in through dex and gets a session",
       fix=LOGIN_FIX, needs=["kubeflow.tls.trusted"])
def test_login(kf, kubeflow_expected, kf_evidence):
    """oauth2-proxy start -> dex password form (-> approval) -> callback ends with the session cookie
    kubeflow.cookie_name and the landing page answers 200."""
    result = kf.account_login(kubeflow_expected.account)
    if not isinstance(result, LoginFailed):
        kf_evidence.add("login", f"user: {result.username}\napproval screen: "
                                 f"{'shown and approved' if result.approval_shown else 'skipped by dex'}\n"
                                 f"session cookie(s): {', '.join(result.cookie_names)}\n\n{result.trail()}")
    assert not isinstance(result, LoginFailed), str(result)


@check("kubeflow.identity.user", "The dashboard reports the logged-in user",
       fix="the dashboard takes the user from the kubeflow-userid header: check the istio RequestAuthentication "
           "dex-jwt (outputClaimToHeaders email -> kubeflow-userid) and CD_USERID_HEADER",
       needs=["kubeflow.login.session"])
def test_env_info_user(kf, kf_login, request, kf_evidence):
    """GET /api/workgroup/env-info as the logged-in user names that user."""
    a = webapps.request_json(kf_login.session, kf.url, "/api/workgroup/env-info", timeout=kf.timeout)
    kf_evidence.add("env-info", a.excerpt())
    version = (a.body.get("platform") or {}).get("kubeflowVersion") if a.is_json_object() else None
    if version:
        note_platform(request.node, kubeflow_version=version)
    user = a.body.get("user") if a.is_json_object() else None
    assert (a.status, user) == (200, kf_login.username), (
        f"env-info answered HTTP {a.status} with user {user!r}, expected 200 with {kf_login.username!r}")


@check("kubeflow.identity.profile_namespace", "The user's profile namespace exists",
       fix="create the Profile (kubeflow.org/v1beta1 or v1) owned by the user; the profile controller creates its namespace",
       needs=["kubeflow.login.session"])
def test_profile_namespace(cluster, kf, kf_login, kubeflow_expected, kf_evidence):
    """The namespace kubeflow.account.namespace exists and its Profile is owned by the account."""
    name = kubeflow_expected.account.namespace
    ns = objects.namespace(cluster.cluster, name)
    prof = objects.profile(cluster.cluster, name)
    owner = ((prof or {}).get("spec", {}).get("owner") or {}).get("name")
    kf_evidence.add(f"namespace {name}", f"namespace: {'present' if ns else 'absent'}\nProfile owner: {owner}")
    assert (ns is not None, owner) == (True, kf_login.username), (
        f"namespace {name} {'present' if ns else 'absent'}, Profile owner {owner!r}; "
        f"expected the namespace with a Profile owned by {kf_login.username!r}")
