"""The Kubeflow side of one run: each login and the served certificate, done once and
remembered (a login refused or an endpoint that does not answer included).

Handed values (URL, CA bundle, cookie name, accounts); it never reads the profile.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol, Sequence
from urllib.parse import urlsplit

from gpuconform import tls
from gpuconform.kubeflow import login as login_mod
from gpuconform.kubeflow.errors import KubeflowError, LoginFailed
from gpuconform.kubeflow.login import DEFAULT_PASSWORD
from gpuconform.once import Once


class Account(Protocol):
    """A test account: its username and where its password is kept (never the password)."""
    username: str
    password_env: str | None
    password_file: str | None


def password_of(account: Account) -> str | None:
    """The account's password from its environment variable, else its file (first line)."""
    if account.password_env and os.environ.get(account.password_env):
        return os.environ[account.password_env]
    if account.password_file:
        try:
            return Path(account.password_file).read_text().splitlines()[0]
        except (OSError, IndexError):
            return None
    return None


def where_password(account: Account) -> str:
    places = [f"${account.password_env}"] if account.password_env else []
    places += [account.password_file] if account.password_file else []
    return " or ".join(places) or "nowhere (set kubeflow.account.password_env or password_file)"


class KubeflowRun:
    """Logins and the served certificate of the Kubeflow at ``url``, each done once per run."""

    def __init__(self, url: str, *, ca_bundle: str | None, cookie_name: str, timeout: float,
                 accounts: Sequence[Account] = ()):
        self.url = url.rstrip("/")
        split = urlsplit(self.url)
        self.host, self.port = split.hostname, split.port or 443
        self.ca_bundle = ca_bundle
        self.verify = ca_bundle or True
        self.cookie_name = cookie_name
        self.timeout = timeout
        self.accounts = tuple(accounts)
        self._once = Once(KubeflowError)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The default and the configured passwords: masked in evidence."""
        return tuple(p for p in [DEFAULT_PASSWORD, *(password_of(a) for a in self.accounts)] if p)

    def certificate(self) -> tls.ServedCertificate:
        return self._once.get("certificate", self._read_certificate)

    def _read_certificate(self) -> tls.ServedCertificate:
        try:
            return tls.served_certificate(self.host, self.port, self.ca_bundle, timeout=self.timeout)
        except tls.TlsUnreachable as exc:
            raise KubeflowError(str(exc)) from None

    def login_as(self, username: str, password: str | None) -> "login_mod.Login | LoginFailed":
        """The login of ``username`` (done once per run); a login failure is returned, not raised;
        an unreachable endpoint raises :class:`KubeflowError` ("could not check")."""
        return self._once.get(("login", username, password), lambda: self._login(username, password))

    def _login(self, username: str, password: str | None) -> "login_mod.Login | LoginFailed":
        if password is None:
            return LoginFailed("password", "no password given")
        try:
            return login_mod.login(self.url, username, password, cookie_name=self.cookie_name,
                                   verify=self.verify, timeout=self.timeout)
        except LoginFailed as exc:
            return exc

    def account_login(self, account: Account) -> "login_mod.Login | LoginFailed":
        password = password_of(account)
        if password is None:
            return LoginFailed("password", f"no password for {account.username} in {where_password(account)}")
        return self.login_as(account.username, password)
