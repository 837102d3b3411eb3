"""Fixtures of the kubeflow layer: what the profile expects, one login per account per run, the
served certificate, evidence with the known passwords masked, and "blocked by" for checks
whose prerequisite failed.

Nothing here runs unless a kubeflow check is selected; without ``kubeflow.url`` in the profile
every check skips (the profile says there is no Kubeflow to check).
"""
from __future__ import annotations

import os
import threading
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from gpuconform.kubeflow import login as login_mod
from gpuconform.kubeflow import tls
from gpuconform.kubeflow.errors import KubeflowError, LoginFailed
from gpuconform.kubeflow.login import DEFAULT_PASSWORD
from gpuconform.plugin import keys
from gpuconform.plugin.cluster_fixtures import Evidence
from gpuconform.plugin.gating import Gate
from gpuconform.profile import KubeflowAccount, KubeflowExpectations, KubeflowIngress
from gpuconform.redact import redact

LOGIN = "kubeflow.login.session"


def password_of(account: KubeflowAccount) -> str | None:
    """The account's password from its environment variable, else its file (first line)."""
    if account.password_env and os.environ.get(account.password_env):
        return os.environ[account.password_env]
    if account.password_file:
        try:
            return Path(account.password_file).read_text().splitlines()[0]
        except (OSError, IndexError):
            return None
    return None


def where_password(account: KubeflowAccount) -> str:
    places = [f"${account.password_env}"] if account.password_env else []
    places += [account.password_file] if account.password_file else []
    return " or ".join(places) or "nowhere (set kubeflow.account.password_env or password_file)"


class KubeflowRun:
    """The Kubeflow side of one pytest process: each login and the certificate, done once."""

    def __init__(self, exp: KubeflowExpectations):
        self.exp = exp
        self.url = exp.url.rstrip("/")
        split = urlsplit(self.url)
        self.host, self.port = split.hostname, split.port or 443
        self.verify = exp.ca_bundle or True
        self.timeout = exp.timeouts.http_s
        self.gate = Gate()
        self._lock = threading.Lock()
        self._logins: dict[str, object] = {}
        self._cert: object = None

    @property
    def secrets(self) -> tuple[str, ...]:
        accounts = [self.exp.account] + ([self.exp.second_account] if self.exp.second_account else [])
        return tuple(p for p in [DEFAULT_PASSWORD, *(password_of(a) for a in accounts)] if p)

    def certificate(self) -> tls.ServedCertificate:
        with self._lock:
            if self._cert is None:
                try:
                    self._cert = tls.served_certificate(self.host, self.port, self.exp.ca_bundle, timeout=self.timeout)
                except KubeflowError as exc:
                    self._cert = exc
        if isinstance(self._cert, KubeflowError):
            raise self._cert
        return self._cert

    def login_as(self, username: str, password: str | None) -> "login_mod.Login | LoginFailed":
        """The login of ``username`` (done once per run); a login failure is returned, not raised;
        an unreachable endpoint raises :class:`KubeflowError` ("could not check")."""
        key = f"{username}\0{password}"
        with self._lock:
            if key not in self._logins:
                if password is None:
                    self._logins[key] = LoginFailed("password", "no password given")
                else:
                    try:
                        self._logins[key] = login_mod.login(self.url, username, password,
                                                            cookie_name=self.exp.cookie_name,
                                                            verify=self.verify, timeout=self.timeout)
                    except (LoginFailed, KubeflowError) as exc:
                        self._logins[key] = exc
            result = self._logins[key]
        if isinstance(result, KubeflowError):
            raise result
        return result

    def account_login(self, account: KubeflowAccount) -> "login_mod.Login | LoginFailed":
        password = password_of(account)
        if password is None:
            return LoginFailed("password", f"no password for {account.username} in {where_password(account)}")
        return self.login_as(account.username, password)


KF_RUN = pytest.StashKey[KubeflowRun]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per expected workload (``<namespace>/<name>``) and per web app of the profile."""
    exp = metafunc.config.stash[keys.PROFILE].profile.kubeflow
    if "component" in metafunc.fixturenames:
        items = [f"{ns}/{name}" for ns, names in exp.components.items() for name in names]
        metafunc.parametrize("component", items, ids=items)
    if "web_app_name" in metafunc.fixturenames:
        names = [a.name for a in exp.web_apps]
        metafunc.parametrize("web_app_name", names, ids=names)


@pytest.fixture(scope="session")
def kubeflow_expected(pytestconfig: pytest.Config) -> KubeflowExpectations:
    """What the profile expects of Kubeflow (profile ``kubeflow:``)."""
    exp = pytestconfig.stash[keys.PROFILE].profile.kubeflow
    if exp.url is None:
        pytest.skip("the profile has no kubeflow.url: no Kubeflow to check")
    return exp


@pytest.fixture(scope="session")
def kf(pytestconfig: pytest.Config, kubeflow_expected: KubeflowExpectations) -> KubeflowRun:
    if KF_RUN not in pytestconfig.stash:
        pytestconfig.stash[KF_RUN] = KubeflowRun(kubeflow_expected)
    return pytestconfig.stash[KF_RUN]


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


class MaskedEvidence(Evidence):
    """Evidence with the configured and default passwords masked on top of the report's redaction."""

    def __init__(self, item: pytest.Item, secrets: tuple[str, ...]):
        super().__init__(item)
        self.secrets = secrets

    def add(self, title: str, text: str) -> None:
        super().add(title, redact(text, self.secrets))


class _Discard:
    def add(self, title: str, text: str) -> None:
        pass


@pytest.fixture
def kf_evidence(request: pytest.FixtureRequest, kf: KubeflowRun) -> MaskedEvidence:
    return MaskedEvidence(request.node, kf.secrets)


@pytest.fixture
def kf_login(kf: KubeflowRun) -> "login_mod.Login":
    """The configured account's session; "blocked by kubeflow.login.session" when login failed."""
    result = kf.account_login(kf.exp.account)  # a KubeflowError: "could not check"
    if isinstance(result, LoginFailed):
        pytest.skip(f"blocked by {LOGIN} (the configured account logs in): {result}")
    return result


@pytest.fixture(autouse=True)
def _gpuconform_kubeflow_blocked_by(request: pytest.FixtureRequest) -> None:
    """"blocked by <check>" when a prerequisite named in ``needs`` fails (its function is run
    with the same session objects, so order and selection do not matter)."""
    mark = request.node.get_closest_marker("check")
    if mark is None or "kf" not in request.fixturenames or not mark.kwargs.get("needs"):
        return
    run: KubeflowRun = request.getfixturevalue("kf")
    values = {"kf": run, "kubeflow_expected": run.exp, "kf_evidence": _Discard()}
    reason = run.gate.blocker(mark.kwargs["needs"], "kubeflow", values)  # a KubeflowError: could not check
    if reason:
        pytest.skip(reason)
