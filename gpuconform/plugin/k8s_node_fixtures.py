"""What this run's options and profile make of ``k8s-node://`` hosts: the connection to the API
server, the hosts its label selectors resolve to, and the pool of their probe pods
(gpuconform/node/k8s_node/; the run's one probe pool hands those hosts to it: fixtures.py)."""
from __future__ import annotations

import pytest

from gpuconform import profile as profile_mod
from gpuconform.node.k8s_node import spec
from gpuconform.plugin import keys

#: hosts that stand for a selector this process could not resolve -> why (their facts are that error)
UNRESOLVED = pytest.StashKey[dict]()


def _connect(config: pytest.Config, prof: profile_mod.Profile):
    """A connection of its own (its own request count), sized for ``parallel`` requests."""
    from gpuconform.cluster.connect import Cluster, counting_client, load_configuration
    opt = config.option
    cfg, source = load_configuration(getattr(opt, "gpuconform_kubeconfig", None),
                                     getattr(opt, "gpuconform_context", None), prof.cluster.timeouts.api_s)
    cfg.connection_pool_maxsize = max(cfg.connection_pool_maxsize or 1, prof.k8s_node.parallel)
    return Cluster(counting_client(cfg), source, prof.cluster.timeouts.api_s)


def connector(config: pytest.Config):
    """``connect()`` for this run's options and profile."""
    prof = config.stash[keys.PROFILE].profile
    return lambda: _connect(config, prof)


def resolve_hosts(config: pytest.Config, specs: list[str]) -> list[str]:
    """``specs`` (checked host specs) with every ``k8s-node://?selector=`` resolved to its nodes
    (one request per selector, none without one); a selector that resolves to nothing stays as a
    host whose probe says why."""
    resolved = spec.resolve(specs, connector(config))
    config.stash.setdefault(UNRESOLVED, {}).update(resolved.unresolved)
    return resolved.hosts


def probe_pods(config: pytest.Config, script_for):
    """The probe pool of this process's ``k8s-node://`` hosts."""
    from gpuconform.node.k8s_node.pods import ProbePods
    from gpuconform.node.k8s_node.template import Settings
    prof = config.stash[keys.PROFILE].profile
    t, k = prof.timeouts, prof.k8s_node
    return ProbePods(connector(config),
                     Settings(image=k.image, image_pull_policy=k.image_pull_policy, start_s=k.start_s,
                              probe_s=t.probe_s, api_s=prof.cluster.timeouts.api_s, parallel=k.parallel),
                     script_for, config.stash.get(UNRESOLVED, {}))
