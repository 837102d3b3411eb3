"""Fixtures of the cluster layer: the connection and snapshot, the run's namespace with its
cleanup, the workload runner, evidence, and "blocked by" for cluster checks.

One :class:`ClusterRun` per pytest process, made on first use (collection of tests/cluster
asks it for the GPU workers); nothing connects when no cluster check is selected.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

import pytest

from gpuconform.cluster.errors import ClusterError
from gpuconform.plugin import keys
from gpuconform.plugin.gating import Gate
from gpuconform.profile import ClusterExpectations
from gpuconform.report.record import note_platform

if TYPE_CHECKING:  # the kubernetes client loads only when a cluster check runs
    from gpuconform.cluster.facts import ClusterFacts
    from gpuconform.cluster.namespace import RunNamespace
    from gpuconform.cluster.workloads import Workloads

REACHABLE = "cluster.api.reachable"
CLUSTER_RUN = pytest.StashKey["ClusterRun"]()


class ClusterRun:
    """The cluster side of one pytest process: connection, facts, namespace, cleanup."""

    def __init__(self, config: pytest.Config):
        from gpuconform.cluster import connect as connect_mod
        from gpuconform.cluster.facts import ClusterFacts
        from gpuconform.cluster.namespace import Cleanup
        opt = config.option
        self.expected: ClusterExpectations = config.stash[keys.PROFILE].profile.cluster
        self.keep_on_failure = bool(getattr(opt, "gpuconform_keep_on_failure", False))
        self.cleanup = Cleanup()
        self.namespace: "RunNamespace | None" = None
        self.gate = Gate()
        self.operator_noted = False
        self.summary: list[str] = []
        self.connect_error: str | None = None
        t = self.expected.timeouts
        try:
            self.cluster = connect_mod.connect(getattr(opt, "gpuconform_kubeconfig", None),
                                               getattr(opt, "gpuconform_context", None), timeout=t.api_s)
        except ClusterError as exc:
            self.cluster, self.connect_error = None, str(exc)
        self.facts = ClusterFacts(self.cluster, gpu_selector=self.expected.gpu_workers.selector,
                                  operator_namespace=self.expected.gpu_operator.namespace,
                                  connect_timeout=t.api_s) if self.cluster else None
        self._lock = threading.Lock()

    @property
    def unreachable(self) -> str | None:
        """Why the API server cannot be used: no connection, no answer to /version, or it stopped
        answering since (stalled: every later request gives up at once)."""
        return self.connect_error or (self.facts.unreachable if self.facts else None) or self.cluster.stalled

    def run_namespace(self) -> "RunNamespace":
        from gpuconform.cluster.namespace import ensure
        with self._lock:
            if self.namespace is None:
                self.namespace = ensure(self.cluster, self.cleanup, self.expected.timeouts.namespace_s)
            return self.namespace

    def finish(self, failed: bool) -> list[str]:
        if self.namespace is not None and failed and self.keep_on_failure:
            self.namespace.keep = True
        errors = self.cleanup.run()
        if self.cluster is not None:
            self.cluster.close()
        return errors


def cluster_run(config: pytest.Config) -> ClusterRun:
    if CLUSTER_RUN not in config.stash:
        config.stash[CLUSTER_RUN] = ClusterRun(config)
    return config.stash[CLUSTER_RUN]


@pytest.fixture(scope="session")
def cluster_session(request: pytest.FixtureRequest):
    """This process's :class:`ClusterRun`; at the end (pass, fail, Ctrl-C or SIGTERM) its
    cleanup runs (SIGTERM is Ctrl-C: plugin/hooks.py), unless --keep-on-failure keeps what a
    failed run created."""
    run = cluster_run(request.config)
    yield run
    failed = request.session.testsfailed > 0
    errors = run.finish(failed)
    # shown by pytest_terminal_summary: output of a fixture teardown is captured
    if run.cluster is not None:
        run.summary.append(f"gpuconform: cluster layer sent {run.cluster.request_count} API requests "
                           f"to {run.cluster.server}")
    if run.namespace is not None and run.namespace.keep:
        run.summary.append(f"gpuconform: kept namespace {run.namespace.name} (--keep-on-failure); remove it "
                           f"with: python -m gpuconform.cluster.sweep --run {run.namespace.run_id}")
    run.summary += [f"gpuconform: cleanup: {e}" for e in errors]


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    run = config.stash.get(CLUSTER_RUN, None)
    for line in run.summary if run is not None else ():
        terminalreporter.write_line(line)


@pytest.fixture(scope="session")
def cluster_expected(pytestconfig: pytest.Config) -> ClusterExpectations:
    """What the profile expects of the cluster (profile ``cluster:``)."""
    return pytestconfig.stash[keys.PROFILE].profile.cluster


@pytest.fixture(scope="session")
def cluster(cluster_session: ClusterRun) -> "ClusterFacts":
    """Read-only snapshot of the cluster: one list per kind, fetched on first use."""
    if cluster_session.facts is None:
        pytest.skip(f"blocked by {REACHABLE} (API server answers): {cluster_session.connect_error}")
    return cluster_session.facts


@pytest.fixture(scope="session")
def workloads(cluster_session: ClusterRun, cluster: "ClusterFacts") -> "Workloads":
    """Runs the pods of ``manifests/`` in the run's namespace (created on first use)."""
    from gpuconform.cluster.workloads import Deadlines, Images, Workloads
    exp = cluster_session.expected
    w, t = exp.workloads, exp.timeouts
    return Workloads(cluster.cluster, cluster_session.run_namespace,
                     Images(w.image, tuple(w.image_pull_secrets), w.image_pull_policy),
                     Deadlines(image_pull_s=t.image_pull_s, run_s=t.pod_run_s, event_s=t.event_s,
                               delete_s=t.namespace_s),
                     keep_on_failure=cluster_session.keep_on_failure)


class Evidence:
    """What a check saw, shown with its result (redacted at the report hook)."""

    def __init__(self, item: pytest.Item):
        self.item = item

    def add(self, title: str, text: str) -> None:
        self.item.stash.setdefault(keys.EVIDENCE, []).append(f"--- {title} ---\n{text.rstrip()}")


class _Discard:
    """Evidence of a prerequisite evaluated for the gate: not this check's to show."""

    def add(self, title: str, text: str) -> None:
        pass


_DISCARD = _Discard()


@pytest.fixture
def evidence(request: pytest.FixtureRequest) -> Evidence:
    return Evidence(request.node)


@pytest.fixture(autouse=True)
def _gpuconform_cluster_blocked_by(request: pytest.FixtureRequest) -> None:
    """Cluster checks: "blocked by cluster.api.reachable" when the API server does not answer,
    "blocked by <check>" when a prerequisite named in ``needs`` fails."""
    mark = request.node.get_closest_marker("check")
    if mark is None or "cluster" not in request.fixturenames:
        return
    run: ClusterRun = request.getfixturevalue("cluster_session")
    check_id = mark.kwargs["id"]
    if check_id == REACHABLE:
        return
    why = run.unreachable
    if why:
        pytest.skip(f"blocked by {REACHABLE} (API server answers): {why}")
    if not run.operator_noted:  # the report's platform fingerprint
        run.operator_noted = True
        version = run.facts.operator_version()
        if version:
            note_platform(request.node, gpu_operator_version=version)
    needs = mark.kwargs.get("needs", ())
    if not needs:
        return
    values = {"cluster": run.facts, "cluster_expected": run.expected, "evidence": _DISCARD}
    callspec = getattr(request.node, "callspec", None)
    target = "cluster"
    if callspec is not None and "gpu_node" in callspec.params:
        values["gpu_node"] = target = callspec.params["gpu_node"]
    reason = run.gate.blocker(needs, target, values)  # a ClusterError: "could not check"
    if reason:
        pytest.skip(reason)
