"""The whole Kubeflow test bed: the control-plane test bed with the Kubeflow objects, and the
login stack (dex, oauth2-proxy, web-app stand-in); plus the profile that points the suite at it.

    with KubeflowBed(state) as bed:
        bed.profile(path)                 # writes a profile YAML for the suite
        bed.env                           # the passwords, as the suite reads them
        bed.stack.restart(cookie_name="_oauth2_proxy"); bed.objects.add_extra_cluster_admin()
"""
from __future__ import annotations

import secrets
from pathlib import Path

import yaml

from testbed.cluster.bed import TestBed
from testbed.kubeflow.k8s_objects import KubeflowObjects
from testbed.kubeflow.stack import HOST, LoginStack, default_users

REPO = Path(__file__).resolve().parents[2]
PASSWORD_ENV, PASSWORD2_ENV = "GPUCONFORM_KUBEFLOW_PASSWORD", "GPUCONFORM_KUBEFLOW_PASSWORD_2"


class KubeflowBed:
    __test__ = False

    def __init__(self, state: Path | str, *, attached: bool = True, user_password: str | None = None):
        self.state = Path(state)
        self.cluster = TestBed(self.state / "cluster", attached=attached)
        # production-like by default: user@example.com does NOT have the default password
        self.users = default_users(user_password or secrets.token_urlsafe(12))
        self.stack: LoginStack | None = None
        self.objects: KubeflowObjects | None = None
        self._attached = attached

    def start(self) -> "KubeflowBed":
        try:
            self.stack = LoginStack(self.state / "login", self.users, attached=self._attached).start()
            self.cluster.start()
            self.objects = KubeflowObjects(self.cluster.api, HOST, {u.email: u.namespace for u in self.users})
            self.objects.create()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        if self.stack is not None:
            self.stack.stop()
        self.cluster.stop()

    def __enter__(self) -> "KubeflowBed":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def env(self) -> dict[str, str]:
        return {PASSWORD_ENV: self.users[0].password, PASSWORD2_ENV: self.users[1].password}

    def kubeflow_section(self, **changes) -> dict:
        first, second = self.users
        section = {
            "url": self.stack.url, "ca_bundle": str(self.stack.ca.bundle), "production": True,
            "account": {"username": first.email, "namespace": first.namespace, "password_env": PASSWORD_ENV},
            "second_account": {"username": second.email, "namespace": second.namespace,
                               "password_env": PASSWORD2_ENV},
        }
        section.update(changes)
        return section

    def profile(self, path: Path, base: Path = REPO / "profiles" / "seed-h100.yaml", **changes) -> Path:
        """``base`` with its ``kubeflow:`` section pointing at this bed: the bed's URL, CA and
        accounts replace base's, ``changes`` go on top (``field=None`` drops the field, so the
        profile's default applies); base's other expectations (its Ingress, its cluster-admin
        subjects...) stay."""
        doc = yaml.safe_load(base.read_text())
        doc["name"] = f"{doc['name']}-simulated"  # the article's platform, as the test bed serves it
        section = {**(doc.get("kubeflow") or {}), **self.kubeflow_section(**changes)}
        doc["kubeflow"] = {k: v for k, v in section.items() if not (k in changes and changes[k] is None)}
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path
