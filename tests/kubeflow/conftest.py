"""Fixtures of the kubeflow layer: what the profile expects, the run's logins and served
certificate (gpuconform/kubeflow/run.py), evidence with the known passwords masked, and the
layer's part of the gate (gpuconform/plugin/gating.py).

Nothing here runs unless a kubeflow check is selected; without ``kubeflow.url`` in the profile
every check skips (the profile says there is no Kubeflow to check).
"""
from __future__ import annotations

import pytest

from gpuconform.kubeflow import login as login_mod
from gpuconform.kubeflow.errors import LoginFailed
from gpuconform.kubeflow.run import KubeflowRun
from gpuconform.plugin import gating, keys, params
from gpuconform.plugin.evidence import DISCARD, Evidence
from gpuconform.plugin.fixtures import setting_up
from gpuconform.profile import KubeflowExpectations, KubeflowIngress

LOGIN = "kubeflow.login.session"
KF_RUN = pytest.StashKey[KubeflowRun]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per expected workload (``<namespace>/<name>``) and per web app of the profile."""
    exp = metafunc.config.stash[keys.PROFILE].profile.kubeflow
    if "component" in metafunc.fixturenames:
        items = [f"{ns}/{name}" for ns, names in exp.components.items() for name in names]
        params.parametrize(metafunc, "component", items, "kubeflow.components")
    if "web_app_name" in metafunc.fixturenames:
        params.parametrize(metafunc, "web_app_name", [a.name for a in exp.web_apps], "kubeflow.web_apps")


@pytest.fixture(scope="session")
def kubeflow_expected(_gpuconform_config: pytest.Config) -> KubeflowExpectations:
    """What the profile expects of Kubeflow (profile ``kubeflow:``)."""
    exp = _gpuconform_config.stash[keys.PROFILE].profile.kubeflow
    if exp.url is None:
        pytest.skip("the profile has no kubeflow.url: no Kubeflow to check")
    return exp


@pytest.fixture(scope="session")
def kf(_gpuconform_config: pytest.Config, kubeflow_expected: KubeflowExpectations) -> KubeflowRun:
    """Logins and the served certificate, each done once per run."""
    exp = kubeflow_expected
    stash = _gpuconform_config.stash
    if KF_RUN not in stash:
        accounts = [exp.account] + ([exp.second_account] if exp.second_account else [])
        stash[KF_RUN] = KubeflowRun(exp.url, ca_bundle=exp.ca_bundle, cookie_name=exp.cookie_name,
                                    timeout=exp.timeouts.http_s, accounts=accounts)
    return stash[KF_RUN]


@pytest.fixture
def kubeflow_ingress(kubeflow_expected: KubeflowExpectations) -> KubeflowIngress:
    """The Ingress the profile declares (kubeflow.ingress); the check skips when it declares none."""
    if kubeflow_expected.ingress is None:
        pytest.skip("the profile declares no kubeflow.ingress: no Ingress to check "
                    "(kubeflow/manifests' example install has none)")
    return kubeflow_expected.ingress


@pytest.fixture
def web_app(web_app_name: str, kubeflow_expected: KubeflowExpectations):
    """The web app of kubeflow.web_apps this test is about."""
    return next(a for a in kubeflow_expected.web_apps if a.name == web_app_name)


@pytest.fixture
def kf_evidence(_gpuconform_config: pytest.Config, kf: KubeflowRun) -> Evidence:
    """Evidence with the configured and default passwords masked on top of the report's redaction."""
    return Evidence(setting_up(_gpuconform_config), kf.secrets)


@pytest.fixture
def kf_login(kf: KubeflowRun, kubeflow_expected: KubeflowExpectations) -> "login_mod.Login":
    """The configured account's session; "blocked by kubeflow.login.session" when login failed."""
    result = kf.account_login(kubeflow_expected.account)  # a KubeflowError: "could not check"
    if isinstance(result, LoginFailed):
        pytest.skip(gating.blocked(LOGIN, "the configured account logs in", result))
    return result


def _kubeflow_subject(_item: pytest.Item, value) -> gating.Subject:
    run: KubeflowRun = value("kf")
    return gating.Subject("kubeflow", lambda: {"kf": run, "kubeflow_expected": value("kubeflow_expected"),
                                               "kf_evidence": DISCARD})


gating.register(gating.LayerGate("kf", None, "", _kubeflow_subject))
