"""A connection to the API server: from --kubeconfig, $KUBECONFIG, in-cluster config or
~/.kube/config; every HTTP request counted; transient errors retried under a deadline; every
failure one line (``Unreachable`` / ``ClusterError``), never a traceback; a request RBAC refuses
(403) is ``Forbidden``, naming the rule the credentials lack (``forbidden: needs <verb> <resource>``).

Refusals are answered at once with their cause, never retried: a certificate that expired, is
signed by another CA or names another host, a server that does not speak TLS, credentials
refused (401). A server that leaves one request unanswered for ``timeout`` (profile
``cluster.timeouts.api_s``), or that could not be reached for a whole ``timeout`` (killed,
its address gone), is *stalled*: every later request of the run gives up at once with that
cause, so a hung or dead API server costs the cluster layer one ``timeout``, not one per check.
A kubeconfig's ``exec:`` credential plugin runs under the same ``timeout``."""
from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any, Callable, TypeVar

import urllib3
import yaml
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

from gpuconform import gcpause
from gpuconform.cluster.errors import ClusterError, Unreachable, api_error, api_error_line
from gpuconform.errors import CannotTell
from gpuconform.tls import served_certificate

T = TypeVar("T")
TRANSIENT_STATUS = {429, 500, 502, 503, 504}
IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"
#: Where a pod finds its service account token and CA (GPUCONFORM_SERVICEACCOUNT_DIR moves it).
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICE_ACCOUNT_ENV = "GPUCONFORM_SERVICEACCOUNT_DIR"
#: OpenSSL verify codes (X509_V_ERR_*): expired; the chain does not lead to a trusted CA; host name.
CERT_EXPIRED = 10
CERT_UNKNOWN_CA = (2, 18, 19, 20, 21)
CERT_WRONG_NAME = (62, 64)
#: OpenSSL's reasons when the other end answers something that is not TLS.
NOT_TLS = ("WRONG_VERSION_NUMBER", "RECORD_LAYER_FAILURE", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST",
           "UNKNOWN_PROTOCOL")


def _k8s():
    """The kubernetes client, imported on first use: it costs a second or more to load, which a
    run without cluster checks should not pay."""
    from kubernetes import client, config
    from kubernetes.client.rest import ApiException
    from kubernetes.config.config_exception import ConfigException
    return client, config, ApiException, ConfigException


def transient(exc: BaseException) -> bool:
    """Worth another try: throttling, a server error, a dropped or refused connection (a TLS
    refusal is not: it will be refused again)."""
    _, _, ApiException, _ = _k8s()
    if isinstance(exc, ApiException):
        return exc.status in TRANSIENT_STATUS or exc.status == 0
    return isinstance(exc, (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError)) and _ssl_error(exc) is None


def _causes(exc: BaseException):
    """``exc`` and what it wraps (urllib3's MaxRetryError.reason, args, __cause__, __context__)."""
    seen, stack = set(), [exc]
    while stack:
        e = stack.pop()
        if not isinstance(e, BaseException) or id(e) in seen:
            continue
        seen.add(id(e))
        yield e
        stack += [getattr(e, "reason", None), e.__cause__, e.__context__, *e.args]


def _ssl_error(exc: BaseException) -> ssl.SSLError | None:
    return next((e for e in _causes(exc) if isinstance(e, ssl.SSLError)), None)


def _timed_out(exc: BaseException) -> bool:
    """No answer in time (urllib3's NewConnectionError, a refused connection, is a
    ConnectTimeoutError only by inheritance)."""
    return any(isinstance(e, (urllib3.exceptions.TimeoutError, TimeoutError))
               and not isinstance(e, urllib3.exceptions.NewConnectionError) for e in _causes(exc))


def _answers_plain_http(host: str, port: int, timeout: float) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(f"GET /version HTTP/1.0\r\nHost: {host}\r\n\r\n".encode())
            return sock.recv(5) == b"HTTP/"
    except OSError:
        return False


def tls_refusal(server: str, ca_bundle: str | None, exc: BaseException, timeout: float = 5) -> str | None:
    """Why the TLS connection to ``server`` was refused, in words (the certificate's expiry date,
    issuer or names, read back from the server), or None when ``exc`` is no TLS failure."""
    err = _ssl_error(exc)
    if err is None:
        return None
    url = urllib.parse.urlsplit(server)
    host, port = url.hostname or "", url.port or 443
    if not isinstance(err, ssl.SSLCertVerificationError):
        if err.reason in NOT_TLS:
            http = _answers_plain_http(host, port, timeout)
            return (f"{server} does not speak TLS" + (": it answers plain HTTP (an http:// server, or the "
                                                       "wrong port)" if http else f" ({err.reason})"))
        return f"TLS handshake with {server} failed: {err.reason or err}"
    try:
        cert = served_certificate(host, port, ca_bundle, timeout=timeout)
    except CannotTell:
        cert = None
    code = err.verify_code
    if code == CERT_EXPIRED:
        when = f" on {cert.not_after:%Y-%m-%d %H:%M} UTC" if cert else ""
        return f"the API server's certificate expired{when}"
    if code in CERT_UNKNOWN_CA:
        by = f"; it is issued by {cert.issuer}" if cert else ""
        return f"the API server's certificate is not signed by the configured CA (CA does not match{by})"
    if code in CERT_WRONG_NAME:
        names = f"; it names {', '.join(cert.names) or 'no host'}" if cert else ""
        return f"the API server's certificate is not valid for host {host}{names}"
    return f"the API server's certificate was refused: {err.verify_message or err}"


def counting_client(configuration):
    """An ApiClient that counts the HTTP requests it sends (watches included), per method."""
    client = _k8s()[0]

    class CountingApiClient(client.ApiClient):
        def __init__(self, configuration):
            super().__init__(configuration)
            self.requests: collections.Counter[str] = collections.Counter()
            self._lock = threading.Lock()
            self.user_agent = "gpuconform"

        def call_api(self, method, url, *args, **kwargs):
            with self._lock:
                self.requests[method] += 1
            return super().call_api(method, url, *args, **kwargs)

        @property
        def request_count(self) -> int:
            return sum(self.requests.values())

    return CountingApiClient(configuration)


#: runs an exec credential plugin (argv[2:]) for at most argv[1] seconds: the client library waits
#: for it without a bound
_BOUNDED_PLUGIN = """import subprocess, sys
try:
    sys.exit(subprocess.run(sys.argv[2:], timeout=float(sys.argv[1])).returncode)
except subprocess.TimeoutExpired:
    sys.exit(f"the exec credential plugin {sys.argv[2]} did not answer within {sys.argv[1]} s (cluster.timeouts.api_s)")
except OSError as exc:
    sys.exit(f"the exec credential plugin {sys.argv[2]} could not start: {exc.strerror or exc}")
"""


def _bound_exec_plugins(merged, timeout: float) -> None:
    """Every ``users[].user.exec`` of a merged kubeconfig run under ``timeout`` (also when the
    client runs it again to refresh an expired token). The merged config is never written back."""
    for user in merged.value.get("users") or []:
        spec = user.value.get("user") if hasattr(user, "value") else None
        plugin = spec.get("exec") if isinstance(spec, dict) else None
        if isinstance(plugin, dict) and plugin.get("command"):
            plugin["args"] = ["-c", _BOUNDED_PLUGIN, f"{timeout:g}", str(plugin["command"]),
                              *[str(a) for a in plugin.get("args") or []]]
            plugin["command"] = sys.executable


@contextlib.contextmanager
def _plugin_errors():
    """What the client library logs (and otherwise swallows) about a failed exec plugin."""
    errors: list[str] = []

    class Handler(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.module == "kube_config" and record.levelno >= logging.ERROR:
                errors.append(record.getMessage())
    handler = Handler()
    logging.getLogger().addHandler(handler)
    try:
        yield errors
    finally:
        logging.getLogger().removeHandler(handler)


def load_configuration(kubeconfig: str | None = None, context: str | None = None, timeout: float = 15):
    """The client configuration and a short text saying where it came from; an exec credential
    plugin is given ``timeout`` seconds to answer."""
    client, config, _, ConfigException = _k8s()
    cfg = client.Configuration()
    env = os.environ.get("KUBECONFIG")
    default = Path(config.KUBE_CONFIG_DEFAULT_LOCATION).expanduser()
    try:
        if kubeconfig or env or not os.environ.get(IN_CLUSTER_ENV):
            path = kubeconfig or (None if env else str(default))
            shown = kubeconfig or env or str(default)
            if path and not Path(path).exists():
                raise Unreachable(f"kubeconfig {shown} does not exist: pass --kubeconfig=PATH, set "
                                  f"KUBECONFIG, or run the suite in a pod (in-cluster config)")
            merged = config.kube_config.KubeConfigMerger(path or env)
            if merged.config is None:
                raise ConfigException(f"{shown}: no configuration found")
            _bound_exec_plugins(merged.config, timeout)
            with _plugin_errors() as errors:
                config.kube_config.KubeConfigLoader(config_dict=merged.config, active_context=context).load_and_set(cfg)
            if errors and not (cfg.api_key or cfg.cert_file):  # the library logs a failed plugin and goes on
                raise ConfigException(errors[-1])
            source = f"kubeconfig {shown}" + (f" (context {context})" if context else "")
        else:
            if context:
                raise Unreachable("--context needs a kubeconfig; in-cluster config has no contexts")
            sa = Path(os.environ.get(SERVICE_ACCOUNT_ENV, SERVICE_ACCOUNT_DIR))
            config.incluster_config.InClusterConfigLoader(
                token_filename=str(sa / "token"), cert_filename=str(sa / "ca.crt")).load_and_set(cfg)
            source = "in-cluster service account"
    except (ConfigException, OSError, ValueError, TypeError, AttributeError, yaml.YAMLError) as exc:
        text = str(exc).strip().splitlines()
        raise Unreachable(f"cannot load cluster config: {text[0] if text else type(exc).__name__}") from None
    cfg.retries = 0  # retries are ours (tenacity, under a deadline), not urllib3's
    return cfg, source


#: objects one list request asks for (``limit``): a list of 10,000 GPU nodes or 20,000 validator pods
#: is read and decoded a page at a time, each page freed of the server's write bookkeeping
#: (``managedFields``, half of a KWOK node's JSON) before the next is asked for; large enough that
#: 10,000 nodes stay within the run's request goal (issue #27: at most 50 requests)
LIST_PAGE = 5000


def _decoded(resp) -> dict:
    """An answer's JSON body ({} when empty)."""
    data = resp.read()
    with gcpause.paused():  # thousands of objects, no cycles
        return json.loads(data) if data else {}


class Cluster:
    """A connected API server: raw JSON requests and watches with retries, the request count."""

    def __init__(self, api, source: str, timeout: float):
        self.api = api
        self.source = source
        self.timeout = timeout
        #: Why the server counts as stalled (it left a request unanswered for ``timeout``), or None.
        self.stalled: str | None = None

    @property
    def server(self) -> str:
        return self.api.configuration.host

    @property
    def request_count(self) -> int:
        return self.api.request_count

    @property
    def request_timeout(self) -> float:
        """Seconds one HTTP request may take (lists of thousands of nodes included)."""
        return self.timeout

    def call(self, what: str, fn: Callable[..., T], *args, deadline_s: float | None = None, **kwargs) -> T:
        """``fn(*args, **kwargs)``, retried on transient errors until the deadline; any failure
        raised as one line naming ``what``."""
        deadline_s = self.timeout if deadline_s is None else deadline_s
        ApiException = _k8s()[2]
        retrying = Retrying(stop=stop_after_delay(deadline_s), wait=wait_exponential(multiplier=0.2, max=2),
                            retry=retry_if_exception(transient), reraise=True)
        started = time.monotonic()
        try:
            return retrying(fn, *args, **kwargs)
        except ApiException as exc:
            if exc.status == 401:
                raise Unreachable(f"{self.server} refused our credentials ({self.source}): "
                                  f"{api_error_line(exc)}") from None
            raise api_error(exc, what) from None  # a 403: "forbidden: needs <verb> <resource> ..."
        except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as exc:
            refusal = tls_refusal(self.server, self.api.configuration.ssl_ca_cert, exc)
            if refusal:
                raise Unreachable(f"{refusal} ({self.source})") from None
            line = (f"API server {self.server} unreachable ({self.source}) while {what}: "
                    f"{api_error_line(exc)}")
            waited = time.monotonic() - started
            if waited >= self.timeout and not self.stalled:  # a whole api_s without a connection: dead
                self.stalled = f"{line} (for {waited:.0f} s; cluster.timeouts.api_s: given up for the run)"
            raise Unreachable(line) from None

    def _send(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None,
              content_type: str = "application/json", timeout: float | None = None):
        """One HTTP request on the raw client (no typed models: they cost seconds to load and
        to fill on thousands of objects). Returns the response; raises ApiException on non-2xx."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        if self.stalled:
            raise Unreachable(self.stalled)
        shown = f"{method} {path}"
        method, url, headers, body, _post = self.api.param_serialize(
            method, path, query_params=[(k, v) for k, v in (query or {}).items() if v is not None] or None,
            header_params=headers, body=body, auth_settings=["BearerToken"])
        timeout = timeout or self.request_timeout
        try:
            resp = self.api.call_api(method, url, headers, body, _request_timeout=timeout)
        except (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError) as exc:
            if not _timed_out(exc):
                raise
            self.stalled = (f"API server {self.server} stopped answering: no answer to {shown} within "
                            f"{timeout:g} s (cluster.timeouts.api_s)")
            raise Unreachable(self.stalled) from None
        if not 200 <= resp.status <= 299:
            resp.read()
            raise _k8s()[2](http_resp=resp)
        return resp

    def request(self, method: str, path: str, query: dict[str, Any] | None = None, body: Any = None, *,
                what: str | None = None, missing_ok: bool = False, deadline_s: float | None = None,
                content_type: str = "application/json", text: bool = False) -> Any:
        """``method path`` with retries on transient errors; the JSON answer (or text), None on a
        404 with ``missing_ok``."""
        def send():
            resp = self._send(method, path, query, body, content_type)
            return resp.read().decode("utf-8", "replace") if text else _decoded(resp)
        try:
            return self.call(what or f"{method} {path}", send, deadline_s=deadline_s)
        except ClusterError as exc:
            if missing_ok and " 404 " in f"{exc} ":
                return None
            raise

    def get_json(self, path: str, query: dict[str, Any] | None = None, *, what: str | None = None,
                 missing_ok: bool = False, deadline_s: float | None = None) -> dict | None:
        """GET ``path`` as plain JSON. With ``missing_ok`` a 404 gives None."""
        return self.request("GET", path, query, what=what or f"reading {path}", missing_ok=missing_ok,
                            deadline_s=deadline_s)

    def list_items(self, path: str, query: dict[str, Any] | None = None, *, what: str | None = None) -> list[dict]:
        """Every object of the collection ``path`` (``query``: its selectors), :data:`LIST_PAGE` a
        request (``limit``, then ``continue``), each without ``metadata.managedFields``. A continue
        token that expires while paging (410 Gone: the server compacted past the list's snapshot)
        restarts the list once, as the API's documentation tells clients to."""
        what = what or f"listing {path}"
        ApiException = _k8s()[2]

        def page(token: str | None) -> dict | None:
            try:
                doc = _decoded(self._send("GET", path, {**(query or {}), "limit": LIST_PAGE, "continue": token}))
            except ApiException as exc:
                if exc.status == 410 and token:
                    return None
                raise
            for item in doc.get("items") or ():
                (item.get("metadata") or {}).pop("managedFields", None)
            return doc

        for _ in range(2):
            items: list[dict] = []
            token = None
            while (doc := self.call(what, page, token)) is not None:
                items += doc.get("items") or ()
                token = (doc.get("metadata") or {}).get("continue")
                if not token:
                    return items
        raise ClusterError(f"{what}: the list's continue token expired twice (410 Gone): the server "
                           f"compacts faster than {LIST_PAGE} objects a request are read")

    def patch(self, path: str, body: dict, *, what: str | None = None) -> dict:
        return self.request("PATCH", path, body=body, what=what, content_type="application/merge-patch+json")

    def watch(self, path: str, query: dict[str, Any], timeout_s: float):
        """Events (``{type, object}`` dicts) of a watch on ``path`` until the server ends it."""
        resp = self._send("GET", path, {**query, "watch": "true", "allowWatchBookmarks": "true",
                                        "timeoutSeconds": max(1, int(timeout_s))}, timeout=timeout_s + 5)
        try:
            buffer = b""
            for chunk in resp.response.stream(None):  # watch answers are chunked: one chunk per event
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        yield json.loads(line)
        finally:
            resp.response.release_conn()

    def version(self) -> dict:
        return self.get_json("/version", what="asking the server version")  # type: ignore[return-value]

    def close(self) -> None:
        self.api.close()


def connect(kubeconfig: str | None = None, context: str | None = None, *, timeout: float = 15) -> Cluster:
    """A :class:`Cluster` for the configured API server (no request is sent yet)."""
    cfg, source = load_configuration(kubeconfig, context, timeout)
    return Cluster(counting_client(cfg), source, timeout)


def wait_reachable(cluster: Cluster, timeout: float) -> dict:
    """``/version`` of the server, retried until ``timeout``: the first contact of a run."""
    t0 = time.monotonic()
    try:
        return cluster.get_json("/version", what="asking the server version", deadline_s=timeout)
    except Unreachable as exc:
        waited = time.monotonic() - t0
        if waited < 1:  # refused at once (certificate, credentials): there was no waiting to tell of
            raise
        raise Unreachable(f"{exc} (gave up after {waited:.0f}s)") from None
