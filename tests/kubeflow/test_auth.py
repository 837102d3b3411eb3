"""Kubeflow is not open: without a session a browser gets the sign-in page, an API call gets 401."""
from gpuconform.checks import check
from gpuconform.kubeflow.login import anonymous_get

AUTH_FIX = ("put oauth2-proxy in front of every route (Kubeflow manifests: common/oauth2-proxy with the "
            "istio ext-authz patches); keep skip_auth_routes to ^/dex/ and api_routes to /api/, /apis/, ^/ml_metadata")


@check("kubeflow.auth.browser_signin", "An unauthenticated browser does not get the dashboard",
       fix=AUTH_FIX, needs=["kubeflow.tls.trusted"])
def test_browser_gets_signin(kf, kf_evidence):
    """GET / without a session answers a redirect or oauth2-proxy's sign-in page (401/403), never 200."""
    r = anonymous_get(kf.url, "/", verify=kf.verify, timeout=kf.timeout)
    kf_evidence.add("GET / without a session", f"HTTP {r.status_code}\n{r.text[:400]}")
    assert r.status_code in (302, 303, 307, 401, 403), f"GET / answered HTTP {r.status_code}, expected a redirect or the sign-in page"


@check("kubeflow.auth.api_401", "An unauthenticated API call gets 401",
       fix=AUTH_FIX, needs=["kubeflow.tls.trusted"])
def test_api_gets_401(kf, kf_evidence):
    """GET /api/workgroup/env-info without a session answers 401 (oauth2-proxy api_routes), not a login page."""
    r = anonymous_get(kf.url, "/api/workgroup/env-info", verify=kf.verify, timeout=kf.timeout, json_request=True)
    kf_evidence.add("GET /api/workgroup/env-info without a session", f"HTTP {r.status_code}\n{r.text[:300]}")
    assert r.status_code == 401, f"GET /api/workgroup/env-info answered HTTP {r.status_code}, expected 401"
