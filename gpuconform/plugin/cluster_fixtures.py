"""Fixtures of the cluster layer: the connection and snapshot, the run's namespace with its
cleanup, the workload runner, evidence, and the layer's part of the gate (gating.py).

One :class:`ClusterRun` per pytest process, made on first use (collection of tests/cluster
asks it for the GPU workers); nothing connects when no cluster check is selected.
"""
from __future__ import annotations

import contextlib
import sys
import threading
import types
from typing import TYPE_CHECKING

import pytest

from gpuconform.cluster.errors import ClusterError
from gpuconform.plugin import gating, keys
from gpuconform.plugin.evidence import DISCARD, Evidence
from gpuconform.plugin.fixtures import setting_up
from gpuconform.profile import ClusterExpectations
from gpuconform.report.record import note_platform

if TYPE_CHECKING:  # the kubernetes client loads only when a cluster check runs
    from gpuconform.cluster.facts import ClusterFacts
    from gpuconform.cluster.namespace import RunNamespace
    from gpuconform.cluster.workloads import Workloads

REACHABLE = "cluster.api.reachable"
API_ANSWERS = "API server answers"
CLUSTER_RUN = pytest.StashKey["ClusterRun"]()


class ClusterRun:
    """The cluster side of one pytest process: connection, facts, namespace, cleanup."""

    def __init__(self, config: pytest.Config):
        from gpuconform.cluster import connect as connect_mod
        from gpuconform.cluster import waiting
        from gpuconform.cluster.facts import ClusterFacts
        from gpuconform.cluster.namespace import Cleanup
        opt = config.option
        self.expected: ClusterExpectations = config.stash[keys.PROFILE].profile.cluster
        self.keep_on_failure = bool(getattr(opt, "gpuconform_keep_on_failure", False))
        self.cleanup = Cleanup()
        waiting.progress = terminal_progress(config, waiting.Progress)
        self.namespace: "RunNamespace | None" = None
        self.operator_noted = False
        self.used = False      #: a check asked for the cluster (else it was made for the collection only)
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


def terminal_progress(config: pytest.Config, progress_type):
    """Progress of long waits (pods scheduling, images pulling, MIG reconfiguration) on the
    terminal or CI log that runs pytest, around pytest's output capture."""
    capman = config.pluginmanager.getplugin("capturemanager")
    stream = sys.__stderr__

    def write(text: str) -> None:
        with capman.global_and_fixture_disabled() if capman else contextlib.nullcontext():
            stream.write(text)
            stream.flush()
    return progress_type(write, tty=stream.isatty())


def cluster_run(config: pytest.Config) -> ClusterRun:
    if CLUSTER_RUN not in config.stash:
        config.stash[CLUSTER_RUN] = ClusterRun(config)
    return config.stash[CLUSTER_RUN]


@pytest.fixture(scope="session")
def cluster_session(_gpuconform_config: pytest.Config) -> ClusterRun:
    """This process's :class:`ClusterRun` (its cleanup runs when the session finishes)."""
    run = cluster_run(_gpuconform_config)
    run.used = True
    return run


@pytest.hookimpl(trylast=True)  # after pytest's own teardown of the session's fixtures, which may use the cluster
def pytest_sessionfinish(session: pytest.Session) -> None:
    """At the end (pass, fail, Ctrl-C or SIGTERM: SIGTERM is Ctrl-C, plugin/hooks.py) the run's
    cleanup runs, unless --keep-on-failure keeps what a failed run created. A session hook, not a
    session fixture's teardown: the per-worker checks ask for ``cluster`` alone, and each fixture a
    check uses is looked up again on every check (docs/architecture.md)."""
    run = session.config.stash.get(CLUSTER_RUN, None)
    if run is None:
        return
    errors = run.finish(session.testsfailed > 0)
    if not run.used:  # made to list the GPU workers for the collection, and no check ran
        return
    # shown by pytest_terminal_summary
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


def run_fixtures(config: pytest.Config) -> types.ModuleType:
    """``cluster`` and ``cluster_expected``, closed over ``config``: a check of a GPU worker (thousands
    at fleet size) asks for no other fixture of the suite, as each one more is looked up again on
    every check (issue #27; fixtures.run_fixtures does the same for the node checks)."""
    @pytest.fixture(scope="session")
    def cluster_expected() -> ClusterExpectations:
        """What the profile expects of the cluster (profile ``cluster:``)."""
        return config.stash[keys.PROFILE].profile.cluster

    @pytest.fixture(scope="session")
    def cluster() -> "ClusterFacts":
        """Read-only snapshot of the cluster: one list per kind, fetched on first use."""
        run = cluster_run(config)
        run.used = True
        if run.facts is None:
            pytest.skip(gating.blocked(REACHABLE, API_ANSWERS, run.connect_error))
        return run.facts

    plugin = types.ModuleType(f"{__name__}.run")
    plugin.cluster, plugin.cluster_expected = cluster, cluster_expected
    return plugin


@pytest.fixture(scope="session")
def ai_expected(_gpuconform_config: pytest.Config):
    """The profile's ``ai_conformance:`` section (the -m aiconformance checks)."""
    return _gpuconform_config.stash[keys.PROFILE].profile.ai_conformance


def declared(exp: ClusterExpectations):
    """The profile's words on the GPU platform, as the library takes them."""
    from gpuconform.cluster.gpunode import Declared
    w = exp.gpu_workers
    return Declared(exp.gpu_stack, exp.gpu_operator.cluster_policy, w.product, w.count, w.sharing.mode,
                    w.sharing.replicas)


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


@pytest.fixture
def evidence(_gpuconform_config: pytest.Config) -> Evidence:
    return Evidence(setting_up(_gpuconform_config))


def _cluster_subject(item: pytest.Item, _value) -> gating.Subject:
    """Also notes the GPU Operator's version for the report's platform fingerprint, once."""
    run = cluster_run(item.config)
    why = run.unreachable
    if why:
        return gating.Subject("cluster", dict, down=why)
    if not run.operator_noted:
        run.operator_noted = True
        version = run.facts.operator_version()
        if version:
            note_platform(item, gpu_operator_version=version)
    callspec = getattr(item, "callspec", None)
    values = {"cluster": run.facts, "cluster_expected": run.expected, "evidence": DISCARD}
    if callspec is not None and "gpu_node" in callspec.params:  # per-node checks: outcomes per node
        values["gpu_node"] = callspec.params["gpu_node"]
        return gating.Subject(values["gpu_node"], lambda: values)
    return gating.Subject("cluster", lambda: values)


gating.register(gating.LayerGate("cluster", REACHABLE, API_ANSWERS, _cluster_subject))
