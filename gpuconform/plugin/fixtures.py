"""Fixtures of the suite: the profile, node facts (one probe per host), and the one gate of the
three layers ("blocked by <check>", gpuconform/plugin/gating.py)."""
from __future__ import annotations

import dataclasses

import shlex
import sys

import pytest
import testinfra
from _pytest.mark.expression import Expression  # as tests/cluster/conftest.py reads -m

from gpuconform import profile as profile_mod
from gpuconform.node import k8s_node, probe
from gpuconform.node.collect import FactsPool
from gpuconform.node.facts import NodeFacts
from gpuconform.plugin import keys
from gpuconform.plugin import gating

REACHABLE = "node.reachable"


def host_label(host) -> str:
    """How a host is named in results and matched by profile groups."""
    return host.backend.get_hostname()


def all_hosts(config: pytest.Config) -> list:
    spec = config.option.hosts
    if not spec:
        return []
    opt = config.option
    return testinfra.get_hosts(spec.split(","), connection=opt.connection, ssh_config=opt.ssh_config,
                               ssh_identity_file=opt.ssh_identity_file, sudo=opt.sudo,
                               sudo_user=opt.sudo_user, ansible_inventory=opt.ansible_inventory,
                               force_ansible=opt.force_ansible)


@pytest.fixture(scope="session")
def gpuconform_profile(pytestconfig: pytest.Config) -> profile_mod.LoadedProfile:
    """The validated platform profile (--profile)."""
    return pytestconfig.stash[keys.PROFILE]


def probe_script(loaded: profile_mod.LoadedProfile):
    """The run's probe maker, for every transport (SSH/local/chroot pool, k8s-node pods): the
    profile's inputs and command deadline; token and overall deadline vary per probe, and the
    DCGM diagnostic is asked of a host only where its profile section opts in."""
    inputs, command_s = loaded.probe_inputs(), loaded.profile.timeouts.command_s

    def script(token: str, deadline_s: float, host: str = "") -> str:
        level = loaded.node_for(host).health.dcgm_diag if host and loaded.profile.node is not None else "off"
        per_host = dataclasses.replace(inputs, dcgm_diag="" if level == "off" else level)
        return probe.build_script(per_host, command_s, deadline_s=deadline_s, token=token)
    return script


#: all the environment a probe of the pool gets: never the runner's own (its DEX_PW, GITHUB_TOKEN,
#: SLACK_WEBHOOK_URL...), which local:// and chroot hosts would otherwise inherit and a host tool print
PROBE_ENV = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/")


def in_clean_environment(script_for):
    """``script_for`` with each script run by ``env -i`` with :data:`PROBE_ENV` only."""
    env = " ".join(PROBE_ENV)
    return lambda token, deadline_s, host="": f"env -i {env} sh -c {shlex.quote(script_for(token, deadline_s, host))}"


POOL = pytest.StashKey[FactsPool]()


def facts_pool(config: pytest.Config) -> FactsPool:
    """The run's probe pool (made on first use) with every host of this process submitted, in the
    order given: an xdist worker probes only the hosts it gets, as their checks ask."""
    if POOL not in config.stash:
        loaded: profile_mod.LoadedProfile = config.stash[keys.PROFILE]
        config.stash[POOL] = FactsPool(in_clean_environment(probe_script(loaded)), loaded.profile.timeouts.probe_s,
                                       loaded.profile.parallel_probes)
        if not hasattr(config, "workerinput"):
            for h in all_hosts(config):  # probe every host at once, not one by one
                if not k8s_node.is_k8s_node(h):  # those are probed through pods (k8s_node_fixtures.py)
                    config.stash[POOL].submit(host_label(h), lambda h=h: h)
    return config.stash[POOL]


@pytest.hookimpl(tryfirst=True)  # before pytest reads every plugin's fixtures and prints its header
def pytest_sessionstart(session: pytest.Session) -> None:
    """Without xdist, when node checks are asked for, the probes start as soon as the inputs are
    checked (plugin/hooks.py), before collection: at thousands of items collecting them takes a
    second the probes' fan-out can use, and a small run's start is its fixed cost (issue #27)."""
    opt = session.config.option
    if opt.collectonly or getattr(opt, "numprocesses", None):
        return
    if not opt.markexpr or Expression.compile(opt.markexpr).evaluate(lambda name, **kw: name == "node"):
        facts_pool(session.config)


def pytest_unconfigure(config: pytest.Config) -> None:
    if POOL in config.stash:
        config.stash[POOL].close()


@pytest.fixture(scope="session")
def _facts_pool(pytestconfig: pytest.Config):
    pool = facts_pool(pytestconfig)
    yield pool
    pool.close()


# ``node`` and ``expected`` follow testinfra's ``host`` (module-scoped): made once per module and
# host, not once per check, as thousands of items would otherwise pay for.
@pytest.fixture(scope="module")
def node(host, _facts_pool: FactsPool, request: pytest.FixtureRequest) -> NodeFacts:
    """Facts of the host under test, gathered once per host."""
    if k8s_node.is_k8s_node(host):
        return request.getfixturevalue("_k8s_node_probes").get(host_label(host))
    return _facts_pool.get(host_label(host), lambda: host)


@pytest.fixture(scope="module")
def expected(host, gpuconform_profile: profile_mod.LoadedProfile) -> profile_mod.NodeExpectations:
    """What the profile expects of this host (defaults + matching groups)."""
    if gpuconform_profile.profile.node is None:
        pytest.skip(f"profile {gpuconform_profile.name} has no `node:` section")
    return gpuconform_profile.node_for(host_label(host), host.backend.get_pytest_id())


def _node_subject(request: pytest.FixtureRequest) -> gating.Subject:
    facts: NodeFacts = request.getfixturevalue("node")
    if facts.error:
        return gating.Subject(facts.host, dict, down=facts.error)
    return gating.Subject(facts.host, lambda: {"node": facts, "expected": request.getfixturevalue("expected")})


gating.register(gating.LayerGate("node", REACHABLE, "host answers the probe", _node_subject))


@pytest.fixture(autouse=True)
def _gpuconform_blocked_by(request: pytest.FixtureRequest) -> None:
    """Skip as "blocked by <check>" when the layer's first check (host or API server answers) or
    a prerequisite named in ``needs`` fails on the same target: node, cluster and kubeflow checks."""
    reason = gating.blocked_by(request)
    if reason:
        pytest.skip(reason)


def pytest_collection_finish(session: pytest.Session) -> None:
    # pytest calls this also when Ctrl-C or SIGTERM ends the collection half-way: the run ends as
    # interrupted then, not with the prerequisites of the modules it never reached "unknown"
    if sys.exc_info()[1] is None:
        gating.load_prerequisites(session)
