"""The login stack of the Kubeflow test bed: real dex and real oauth2-proxy (built from the Go
module proxy by build.sh) in front of the web-app stand-in (webapps.py), all on 127.0.0.1.

    https://localhost:<port>/  --TLS (test CA)-->  oauth2-proxy  (istio + ext-authz's role)
        /dex/*      skip_auth_routes            ->  dex            (http, loopback)
        /oauth2/*   oauth2-proxy itself
        else        session required; Authorization: Bearer <dex ID token>
                                                ->  web-app stand-in (verifies the token)

oauth2-proxy runs here as the reverse proxy (upstreams) instead of Kubeflow's ext-authz with
``upstreams = ["static://200"]``: the user-facing behaviour (sign-in page, 401 on api_routes,
/dex/ unauthenticated, the session cookie, the ID token passed on) is the same.

Configs follow Kubeflow 1.10's ``oauth2_proxy.cfg`` and dex ``config.yaml`` (docs/formats §8).
Processes run under testbed.cluster.procs.Supervisor: own sessions, pid files, PDEATHSIG,
stopped on exit, signal or a later start in the same folder.
"""
from __future__ import annotations

import dataclasses
import secrets
import signal
import ssl
import urllib.request
from pathlib import Path

import bcrypt
import yaml

from testbed.cluster.procs import Supervisor
from testbed.kubeflow.binaries import bin_dir
from testbed.kubeflow.pki import Issued, TestCA
from testbed.kubeflow.webapps import KubeflowWebApps, TokenVerifier
from testbed.ports import free_port
from testbed.waiting import GiveUp, wait_for

CLIENT_ID = "kubeflow-oidc-authservice"
COOKIE = "oauth2_proxy_kubeflow"
DEFAULT_USER, DEFAULT_PASSWORD = "user@example.com", "12341234"
HOST = "localhost"


_NO_VERIFY = ssl.create_default_context()
_NO_VERIFY.check_hostname = False
_NO_VERIFY.verify_mode = ssl.CERT_NONE


@dataclasses.dataclass
class User:
    email: str
    username: str
    user_id: str
    password: str
    namespace: str


@dataclasses.dataclass
class Settings:
    """What a fault changes; ``LoginStack.restart(**changes)`` applies a new one."""
    skip_approval: bool = True
    cookie_name: str = COOKIE
    cert: str = "good"              # good | other-ca | other-host | expiring | expired
    first_user_password: str | None = None  # e.g. the default 12341234 (a production fault)
    dex_redirect_uri: str = "/oauth2/callback"  # the dex client's redirectURIs (another: a broken chain)


def default_users(password: str = DEFAULT_PASSWORD) -> list[User]:
    return [User(DEFAULT_USER, "user", "15841185641784", password, "kubeflow-user-example-com"),
            User("user2@example.com", "user2", "15841185641785", secrets.token_urlsafe(12),
                 "kubeflow-user2-example-com")]


class LoginStack:
    def __init__(self, state: Path, users: list[User] | None = None, *, attached: bool = True):
        self.state = Path(state)
        self.state.mkdir(parents=True, exist_ok=True)
        self.users = users or default_users()
        self.procs = Supervisor(self.state, attached=attached)
        self.bins = bin_dir()
        self.ca = TestCA(self.state / "pki", "kubeflow")
        self.other_ca = TestCA(self.state / "pki", "other")
        self.certs: dict[str, Issued] = {
            "good": self.ca.issue("kubeflow", [HOST, "127.0.0.1"]),
            "other-ca": self.other_ca.issue("kubeflow-other-ca", [HOST, "127.0.0.1"]),
            "other-host": self.ca.issue("kubeflow-other-host", ["kubeflow.other.example"]),
            "expiring": self.ca.issue("kubeflow-expiring", [HOST, "127.0.0.1"], days=2),
            "expired": self.ca.issue("kubeflow-expired", [HOST, "127.0.0.1"], days=-0.01),
        }
        self.dex_port, self.port = free_port(), free_port()
        self.client_secret = secrets.token_urlsafe(24)
        self.cookie_secret = secrets.token_hex(16)
        self.settings = Settings()
        issuer = f"http://127.0.0.1:{self.dex_port}/dex"
        self.webapps = KubeflowWebApps(TokenVerifier(issuer, f"{issuer}/keys", CLIENT_ID),
                                       {u.email: u.namespace for u in self.users})

    @property
    def url(self) -> str:
        return f"https://{HOST}:{self.port}"

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.dex_port}/dex"

    # -- configs ----------------------------------------------------------------------------------
    def dex_config(self) -> dict:
        return {
            "issuer": self.issuer,
            "storage": {"type": "memory"},
            "web": {"http": f"127.0.0.1:{self.dex_port}"},
            "logger": {"level": "info", "format": "text"},
            "oauth2": {"skipApprovalScreen": self.settings.skip_approval},
            "enablePasswordDB": True,
            "staticPasswords": [{"email": u.email, "hashFromEnv": f"DEX_{u.username.upper()}_PASSWORD",
                                 "username": u.username, "userID": u.user_id} for u in self.users],
            "staticClients": [{"idEnv": "OIDC_CLIENT_ID", "redirectURIs": [self.settings.dex_redirect_uri],
                               "name": "Dex Login Application", "secretEnv": "OIDC_CLIENT_SECRET"}],
        }

    def dex_env(self) -> dict[str, str]:
        env = {"PATH": "/usr/bin:/bin", "OIDC_CLIENT_ID": CLIENT_ID, "OIDC_CLIENT_SECRET": self.client_secret}
        for i, u in enumerate(self.users):
            password = self.settings.first_user_password if i == 0 and self.settings.first_user_password else u.password
            env[f"DEX_{u.username.upper()}_PASSWORD"] = bcrypt.hashpw(password.encode(), bcrypt.gensalt(10)).decode()
        return env

    def oauth2_proxy_config(self) -> str:
        cert = self.certs[self.settings.cert]
        lines = {
            "https_address": f"127.0.0.1:{self.port}",
            "tls_cert_file": str(cert.cert), "tls_key_file": str(cert.key),
            "provider": "oidc",
            "oidc_issuer_url": self.issuer,
            "client_id": CLIENT_ID,
            "scope": "profile email groups openid",
            "email_domains": ["*"],
            "upstreams": [f"http://127.0.0.1:{self.dex_port}/dex/", f"http://127.0.0.1:{self.webapps.port}/"],
            "skip_auth_routes": ["^/dex/"],
            "api_routes": ["/api/", "/apis/", "^/ml_metadata"],
            "skip_oidc_discovery": True,
            "login_url": "/dex/auth",
            "redeem_url": f"{self.issuer}/token",
            "oidc_jwks_url": f"{self.issuer}/keys",
            "skip_provider_button": False,
            "provider_display_name": "Dex",
            "banner": "-", "footer": "-",
            "prompt": "none",
            "pass_authorization_header": True,
            "set_xauthrequest": True,
            "cookie_name": self.settings.cookie_name,
            "cookie_expire": "24h",
            "cookie_refresh": 0,
            "code_challenge_method": "S256",
            "redirect_url": "/oauth2/callback",
            "relative_redirect_url": True,
        }

        def toml(v):
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, int):
                return str(v)
            if isinstance(v, list):
                return "[ " + ", ".join(toml(x) for x in v) + " ]"
            return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'
        return "".join(f"{k} = {toml(v)}\n" for k, v in lines.items())

    # -- lifecycle --------------------------------------------------------------------------------
    def start(self, timeout: float = 60) -> "LoginStack":
        self.procs.stop_all()  # whatever an interrupted run left in this folder
        self.webapps.start()
        try:
            self._start_dex(timeout)
            self._start_proxy(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_dex(self, timeout: float) -> None:
        cfg = self.state / "dex.yaml"
        cfg.write_text(yaml.safe_dump(self.dex_config(), sort_keys=False))
        self.procs.start("dex", [str(self.bins / "dex"), "serve", str(cfg)], env=self.dex_env())
        self._wait_http("dex", f"{self.issuer}/.well-known/openid-configuration", timeout)

    def _start_proxy(self, timeout: float) -> None:
        cfg = self.state / "oauth2_proxy.cfg"
        cfg.write_text(self.oauth2_proxy_config())
        cfg.chmod(0o600)
        env = {"PATH": "/usr/bin:/bin", "OAUTH2_PROXY_CLIENT_SECRET": self.client_secret,
               "OAUTH2_PROXY_COOKIE_SECRET": self.cookie_secret}
        self.procs.start("oauth2-proxy", [str(self.bins / "oauth2-proxy"), f"--config={cfg}"], env=env)
        # any TLS answer will do: the certificate may be a fault's (another CA, another host)
        self._wait_http("oauth2-proxy", f"https://127.0.0.1:{self.port}/ping", timeout)

    def _wait_http(self, name: str, url: str, timeout: float) -> None:
        def up() -> bool:
            if self.procs.exited(name) is not None:
                raise GiveUp(f"{name} exited ({self.procs.exited(name)}):\n{self.procs.log_tail(name)}")
            with urllib.request.urlopen(url, timeout=2, context=_NO_VERIFY) as r:
                return r.status == 200
        wait_for(f"{name} answering {url}", up, timeout)

    def stop_process(self, name: str) -> None:
        """Stop one of dex / oauth2-proxy (a fault: "dex down")."""
        for rec in self.procs.recorded():
            if rec.name == name:
                self.procs._signal(rec, signal.SIGTERM)
                self.procs._wait_gone(name, rec, 10)
                (self.procs.pid_dir / f"{name}.pid").unlink(missing_ok=True)

    def restart(self, **changes) -> None:
        """Apply new settings (a fault, or ``Settings()`` to heal) by restarting dex and oauth2-proxy."""
        self.settings = dataclasses.replace(Settings(), **changes)
        self.procs.stop_all()
        self._start_dex(60)
        self._start_proxy(60)

    def stop(self) -> None:
        self.procs.stop_all()
        self.webapps.stop()

    def __enter__(self) -> "LoginStack":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
