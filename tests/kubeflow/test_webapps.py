"""The Kubeflow components answer the logged-in user with the JSON their front ends expect."""
from gpuconform.checks import check
from gpuconform.kubeflow import webapps


@check("kubeflow.webapp.answers", "The web app answers the user with the expected JSON",
       fix="kubectl -n kubeflow logs deploy/<web app> and its istio VirtualService; the user's namespace "
           "needs the web app's RoleBindings (created by the profile controller)",
       needs=["kubeflow.login.session"])
def test_web_app_answers(kf, kf_login, kubeflow_expected, web_app, kf_evidence):
    """GET kubeflow.web_apps[].path for the user's namespace answers 200 with the listed keys and values."""
    path = web_app.path.format(namespace=kubeflow_expected.account.namespace)
    a = webapps.request_json(kf_login.session, kf.url, path, timeout=kf.timeout)
    kf_evidence.add(web_app.name, a.excerpt())
    problems = webapps.shape_problems(a.body, web_app.keys, web_app.equals) if a.status == 200 else []
    assert a.status == 200 and not problems, (
        f"GET {path} answered HTTP {a.status}{': ' + '; '.join(problems) if problems else ''}, "
        f"expected 200 with {', '.join(web_app.keys) or 'a JSON object'}")
