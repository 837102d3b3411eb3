"""One HTTP request with a one-line error: the only place the kubeflow library talks HTTP."""
from __future__ import annotations

import requests

from gpuconform.kubeflow.errors import KubeflowError


def new_session(verify: str | bool) -> requests.Session:
    """A cookie-keeping session verifying TLS against ``verify`` (a CA bundle path, or True for
    the system trust store)."""
    s = requests.Session()
    s.verify = verify
    s.headers["User-Agent"] = "gpuconform"
    return s


def send(session: requests.Session, method: str, url: str, *, what: str, timeout: float,
         **kwargs) -> requests.Response:
    """``method url`` without following redirects; network and TLS failures raise
    :class:`KubeflowError` as one line naming ``what``."""
    # per request: a session-level CA bundle loses to $REQUESTS_CA_BUNDLE / $CURL_CA_BUNDLE in requests
    kwargs.setdefault("verify", session.verify)
    try:
        return session.request(method, url, allow_redirects=False, timeout=timeout, **kwargs)
    except requests.exceptions.SSLError as exc:
        raise KubeflowError(f"{what}: TLS failed: {_reason(exc)}") from None
    except requests.exceptions.Timeout:
        raise KubeflowError(f"{what}: no answer within {timeout:g}s") from None
    except requests.exceptions.RequestException as exc:
        raise KubeflowError(f"{what}: {_reason(exc)}") from None


def _reason(exc: Exception) -> str:
    """The innermost useful text of a requests/urllib3 error chain."""
    inner = exc
    while inner.args and isinstance(inner.args[0], Exception):
        inner = inner.args[0]
    reason = getattr(inner, "reason", None)
    text = str(reason if reason is not None else inner)
    for marker in ("certificate verify failed", "Connection refused", "Name or service not known"):
        if marker in text:
            start = text.index(marker)
            return text[start:].split(")")[0].rstrip(" ('\"")
    return text.splitlines()[0][:300] if text else type(exc).__name__
