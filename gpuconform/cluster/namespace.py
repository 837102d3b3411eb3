"""The run's namespace and the cleanup of everything a run creates.

One namespace per run: name ``gpuconform-<run id>``, labelled ``app.kubernetes.io/managed-by=
gpuconform`` and ``gpuconform.io/run=<run id>`` (what the sweeper looks for), Pod Security
"restricted" enforced. Every resource registers its cleanup right after it is created; cleanup
runs in reverse order, tolerates NotFound, and runs once (fixture teardown on pass, fail and
Ctrl-C; ``atexit`` as the last resort).
"""
from __future__ import annotations

import atexit
import datetime as dt
import secrets
import threading
from typing import Callable

from gpuconform.cluster.connect import Cluster
from gpuconform.cluster.errors import ClusterError, Forbidden

PREFIX = "gpuconform-"
MANAGED_BY = {"app.kubernetes.io/managed-by": "gpuconform"}
RUN_LABEL = "gpuconform.io/run"
STARTED_ANNOTATION = "gpuconform.io/started"
#: on a node the disruptive check relabelled: the value to put back (read by the sweeper)
RESTORE_MIG_CONFIG = "gpuconform.io/restore-mig-config"
POD_SECURITY = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "audit", "warn")}
POD_SECURITY["pod-security.kubernetes.io/enforce-version"] = "latest"


def new_run_id() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d%H%M%S") + "-" + secrets.token_hex(2)


def run_labels(run_id: str) -> dict[str, str]:
    return {**MANAGED_BY, RUN_LABEL: run_id}


class Cleanup:
    """A stack of undo actions, run in reverse, each once; NotFound counts as done."""

    def __init__(self) -> None:
        self._stack: list[tuple[str, Callable[[], object]]] = []
        self._lock = threading.Lock()
        self.errors: list[str] = []
        atexit.register(self.run)

    def add(self, what: str, undo: Callable[[], object]) -> None:
        with self._lock:
            self._stack.append((what, undo))

    def discard(self, what: str) -> None:
        with self._lock:
            self._stack = [(w, u) for w, u in self._stack if w != what]

    def run(self) -> list[str]:
        """Undo everything registered so far; returns what could not be undone."""
        while True:
            with self._lock:
                if not self._stack:
                    break
                what, undo = self._stack.pop()
            try:
                undo()
            except Exception as exc:  # noqa: BLE001 - cleanup goes on with the rest
                self.errors.append(f"{what}: {type(exc).__name__}: {exc}")
        return self.errors

    def __len__(self) -> int:
        return len(self._stack)


class RunNamespace:
    def __init__(self, cluster: Cluster, cleanup: Cleanup, run_id: str | None = None):
        self.cluster = cluster
        self.cleanup = cleanup
        self.run_id = run_id or new_run_id()
        self.name = PREFIX + self.run_id
        self.labels = run_labels(self.run_id)
        self.created = False
        self.keep = False

    def create(self) -> "RunNamespace":
        body = {"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": self.name, "labels": {**self.labels, **POD_SECURITY},
                             "annotations": {STARTED_ANNOTATION: dt.datetime.now(dt.timezone.utc).isoformat(
                                 timespec="seconds")}}}
        self.cluster.request("POST", "/api/v1/namespaces", body=body, what=f"creating namespace {self.name}")
        self.created = True
        self.cleanup.add(f"namespace {self.name}", self.delete)
        return self

    def delete(self) -> None:
        if self.keep:
            return
        self.cluster.request("DELETE", f"/api/v1/namespaces/{self.name}", body={"propagationPolicy": "Background"},
                             what=f"deleting namespace {self.name}", missing_ok=True, deadline_s=self.cluster.timeout)

    def wait_default_service_account(self, timeout: float) -> None:
        """Pods are refused until the namespace's default service account exists."""
        from gpuconform.cluster.waiting import watch_one
        watch_one(self.cluster, f"service account default in {self.name}",
                  f"/api/v1/namespaces/{self.name}/serviceaccounts", name="default",
                  timeout=timeout, condition=lambda sa: sa is not None,
                  describe=lambda sa: "not created yet (is kube-controller-manager running?)")


def ensure(cluster: Cluster, cleanup: Cleanup, timeout: float, run_id: str | None = None) -> RunNamespace:
    ns = RunNamespace(cluster, cleanup, run_id).create()
    try:
        ns.wait_default_service_account(timeout)
    except Forbidden:
        raise  # its one line names the namespace already
    except Exception as exc:
        raise ClusterError(f"namespace {ns.name}: {exc}") from None
    return ns
