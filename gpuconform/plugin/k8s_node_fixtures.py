"""Fixtures of ``k8s-node://`` hosts: the probe pods of this process (gpuconform/node/k8s_node.py),
every such host submitted at once in one batch, their namespace deleted when the session ends."""
from __future__ import annotations

import pytest

from gpuconform import profile as profile_mod
from gpuconform.plugin import keys

PROBE_PODS = pytest.StashKey["object"]()


def _connect(config: pytest.Config, prof: profile_mod.Profile):
    """A connection of its own (its own request count), sized for ``parallel`` requests."""
    from gpuconform.cluster.connect import Cluster, counting_client, load_configuration
    opt = config.option
    cfg, source = load_configuration(getattr(opt, "gpuconform_kubeconfig", None),
                                     getattr(opt, "gpuconform_context", None), prof.cluster.timeouts.api_s)
    cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 1, prof.k8s_node.parallel)
    return Cluster(counting_client(cfg), source, prof.cluster.timeouts.api_s)


def connector(config: pytest.Config):
    """``connect()`` for this run's options and profile (also what expands selectors)."""
    prof = config.stash[keys.PROFILE].profile
    return lambda: _connect(config, prof)


@pytest.fixture(scope="session")
def _k8s_node_probes(pytestconfig: pytest.Config, gpuconform_profile: profile_mod.LoadedProfile):
    from gpuconform.node import k8s_node
    from gpuconform.plugin.fixtures import all_hosts, host_label, probe_script
    prof = gpuconform_profile.profile
    t, k = prof.timeouts, prof.k8s_node
    probes = k8s_node.ProbePods(
        connector(pytestconfig),
        k8s_node.Settings(image=k.image, image_pull_policy=k.image_pull_policy, start_s=k.start_s,
                          probe_s=t.probe_s, api_s=prof.cluster.timeouts.api_s, parallel=k.parallel),
        probe_script(gpuconform_profile))
    pytestconfig.stash[PROBE_PODS] = probes
    if not hasattr(pytestconfig, "workerinput"):  # an xdist worker probes only the hosts it gets
        probes.submit([host_label(h) for h in all_hosts(pytestconfig) if k8s_node.is_k8s_node(h)])
    yield probes
    errors = probes.close()
    probes.summary = [f"gpuconform: k8s-node probes: {probes.pods_created} pods in namespace {probes.namespace} "
                      f"(deleted), {probes.request_count} API requests"] + [f"gpuconform: cleanup: {e}" for e in errors]


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    probes = config.stash.get(PROBE_PODS, None)
    for line in getattr(probes, "summary", ()):
        terminalreporter.write_line(line)
