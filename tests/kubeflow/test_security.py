"""Security findings: no default login in production, tenants isolated, cluster-admin held only by
the subjects the platform team allows."""
import pytest

from gpuconform.checks import check
from gpuconform.kubeflow import objects, webapps
from gpuconform.kubeflow.errors import CredentialsRejected
from gpuconform.kubeflow.login import DEFAULT_PASSWORD, DEFAULT_USER

pytestmark = pytest.mark.security


@check("kubeflow.security.default_login_rejected", "The default Kubeflow login is rejected in production",
       fix="replace the static dex user (common/dex: staticPasswords hash) or connect dex to the company IdP, "
           "then remove user@example.com",
       needs=["kubeflow.tls.trusted"])
def test_default_login_rejected(kf, kubeflow_expected, kf_evidence):
    """When kubeflow.production is true, dex rejects user@example.com with the default password."""
    if not kubeflow_expected.production:
        pytest.skip("kubeflow.production is false: the default login is allowed")
    result = kf.login_as(DEFAULT_USER, DEFAULT_PASSWORD)
    kf_evidence.add("default login attempt", f"{DEFAULT_USER}: {result if isinstance(result, Exception) else 'logged in'}")
    assert isinstance(result, CredentialsRejected), (
        f"{DEFAULT_USER} with the default password " +
        ("logged in" if not isinstance(result, Exception) else f"did not get a clear rejection: {result}") +
        ", expected dex to reject it on a production platform")


@check("kubeflow.security.tenant_isolation", "A second user is refused the first user's namespace",
       fix="check the Profile's contributors and the web apps' authorization (SubjectAccessReview as kubeflow-userid)",
       needs=["kubeflow.login.session"])
def test_second_user_forbidden(kf, kf_login, kubeflow_expected, kf_evidence):
    """kubeflow.second_account, logged in, gets 403 listing notebooks in kubeflow.account.namespace."""
    second = kubeflow_expected.second_account
    if second is None:
        pytest.skip("kubeflow.second_account is not set: no second user to test isolation with")
    other = kf.account_login(second)
    assert not isinstance(other, Exception), f"{second.username} could not log in: {other}"
    path = f"/jupyter/api/namespaces/{kubeflow_expected.account.namespace}/notebooks"
    a = webapps.request_json(other.session, kf.url, path, timeout=kf.timeout)
    kf_evidence.add(f"{second.username} asks for another tenant's notebooks", a.excerpt())
    assert a.status == 403, f"{second.username} got HTTP {a.status} on {path}, expected 403"


@check("kubeflow.security.cluster_admin", "Only the allowed subjects hold cluster-admin",
       fix="kubectl delete clusterrolebinding <name> for subjects not in kubeflow.cluster_admin_subjects; "
           "run one ML platform with cluster-wide admin per cluster")
def test_cluster_admin_subjects(cluster, kubeflow_expected, kf_evidence):
    """Every subject of a ClusterRoleBinding to ClusterRole cluster-admin is in kubeflow.cluster_admin_subjects."""
    held = objects.cluster_admin_subjects(cluster.cluster)
    kf_evidence.add("cluster-admin bindings", "\n".join(f"{s}: {', '.join(b)}" for s, b in sorted(held.items())))
    extra = {s: b for s, b in held.items() if s not in kubeflow_expected.cluster_admin_subjects}
    assert not extra, ("cluster-admin also held by " +
                       "; ".join(f"{s} (binding {', '.join(b)})" for s, b in sorted(extra.items())) +
                       f", expected only {', '.join(kubeflow_expected.cluster_admin_subjects)}")
