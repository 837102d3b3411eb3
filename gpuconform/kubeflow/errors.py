"""Errors of the kubeflow library; each str() is one line naming the step that failed."""
from __future__ import annotations

from gpuconform.errors import CannotTell


class KubeflowError(CannotTell):
    """The Kubeflow endpoint could not be asked (network, TLS): "could not check"."""


class LoginFailed(Exception):
    """The login flow stopped at ``step``; str() is ``login step '<step>' failed: <why>``."""

    def __init__(self, step: str, why: str):
        super().__init__(f"login step '{step}' failed: {why}")
        self.step, self.why = step, why


class CredentialsRejected(LoginFailed):
    """Dex showed its password form again: the username or password is wrong."""

    def __init__(self, username: str):
        super().__init__("dex credentials", f"dex rejected the credentials for {username}")
        self.username = username

    def __str__(self) -> str:
        return f"dex rejected the credentials for {self.username}"
