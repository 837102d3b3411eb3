"""Fixtures of the suite: the profile, node facts (one probe per host), and the one gate of the
three layers ("blocked by <check>", gpuconform/plugin/gating.py)."""
from __future__ import annotations

import dataclasses

import shlex
import sys
import types

import pytest
from _pytest.mark.expression import Expression  # as tests/cluster/conftest.py reads -m

from gpuconform import profile as profile_mod
from gpuconform.node import probe
from gpuconform.node.collect import FactsPool
from gpuconform.node.facts import NodeFacts
from gpuconform.node.k8s_node import SCHEME as K8S_NODE
from gpuconform.node.pool import ByKind, ProbePool
from gpuconform.node.pool import label as host_label
from gpuconform.plugin import gating, hosts, k8s_node_fixtures, keys

REACHABLE = "node.reachable"


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


POOL = pytest.StashKey[ProbePool]()
POOL_SUMMARY = pytest.StashKey[list]()


def probe_pool(config: pytest.Config) -> ProbePool:
    """The run's probe pool (made on first use; one pool per host kind behind it, each made when
    a host of its kind is first submitted) with every host of this process submitted, in the
    order given: an xdist worker probes only the hosts it gets, as their checks ask."""
    if POOL not in config.stash:
        loaded: profile_mod.LoadedProfile = config.stash[keys.PROFILE]
        probe_s = loaded.profile.timeouts.probe_s
        config.stash[POOL] = ByKind(
            {K8S_NODE: lambda: k8s_node_fixtures.probe_pods(config, probe_script(loaded))},
            lambda: FactsPool(in_clean_environment(probe_script(loaded)), probe_s, loaded.profile.parallel_probes),
            probe_s)
        if not hasattr(config, "workerinput"):
            config.stash[POOL].submit(hosts.all_hosts(config))  # probe every host at once, not one by one
    return config.stash[POOL]


def _close_pool(config: pytest.Config) -> None:
    if POOL in config.stash:
        config.stash.setdefault(POOL_SUMMARY, []).extend(config.stash[POOL].close())


def start_probes(config: pytest.Config) -> None:
    """Without xdist, when node checks are asked for, the probes start as soon as the inputs are
    checked (plugin/plugin.py), before the rest of the suite loads and collects: at thousands of
    items collecting them takes a second the probes' fan-out can use, and a small run's start is
    its fixed cost (issue #27)."""
    opt = config.option
    if opt.collectonly or getattr(opt, "numprocesses", None):
        return
    if not opt.markexpr or Expression.compile(opt.markexpr).evaluate(lambda name, **kw: name == "node"):
        probe_pool(config)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """The pool ends with the session, before the reports and the terminal summary (its lines)
    are written; a run that never finishes its session closes it at unconfigure."""
    _close_pool(session.config)


def pytest_unconfigure(config: pytest.Config) -> None:
    _close_pool(config)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    for line in config.stash.get(POOL_SUMMARY, ()):
        terminalreporter.write_line(f"gpuconform: {line}")


def _node_subject(_item: pytest.Item, value) -> gating.Subject:
    facts: NodeFacts = value("node")
    if facts.error:
        return gating.Subject(facts.host, dict, down=facts.error)
    return gating.Subject(facts.host, lambda: {"node": facts, "expected": value("expected")})


gating.register(gating.LayerGate("node", REACHABLE, "host answers the probe", _node_subject))


def node_facts(config: pytest.Config, host) -> NodeFacts:
    """The ``node`` of a check on ``host``: its facts, gathered once per host."""
    return probe_pool(config).get(host)


def expectations(config: pytest.Config, host) -> profile_mod.NodeExpectations:
    """The ``expected`` of a check on ``host``: what the profile expects of it (defaults + matching groups)."""
    loaded: profile_mod.LoadedProfile = config.stash[keys.PROFILE]
    if loaded.profile.node is None:
        pytest.skip(f"profile {loaded.name} has no `node:` section")
    return loaded.node_for(host_label(host), host.backend.get_pytest_id())


#: the item being set up (:func:`setting_up`)
SETTING_UP = pytest.StashKey[pytest.Item]()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    item.config.stash[SETTING_UP] = item


def setting_up(config: pytest.Config) -> pytest.Function:
    """The check being set up, for a fixture of that check: ``request.node`` without ``request`` (its
    ``_request`` is that request). Not a fixture of its own: each fixture a check uses is looked up
    again on every check, and a function-scoped one is made again (docs/architecture.md)."""
    return config.stash[SETTING_UP]


def run_fixtures(config: pytest.Config) -> types.ModuleType:
    """The suite's fixtures closed over ``config``: ``_gpuconform_config``, for the suite's fixtures to
    ask for instead of ``pytestconfig`` and ``request`` (a fixture that asks for ``request``, or
    ``pytestconfig`` which asks for ``request``, makes pytest build a fixture definition, a
    signature, for ``request`` each time an item uses it, even a session fixture already made: 3 %
    of a 3,000-node run), the gate, and the node checks' host parameter, ``node`` and ``expected``,
    which so ask for no other fixture (issue #27; docs/architecture.md "pytest's internals still used")."""
    @pytest.fixture(scope="session")
    def _gpuconform_config() -> pytest.Config:
        """The run's config: ``pytestconfig`` without ``request``."""
        return config

    @pytest.fixture(autouse=True)
    def _gpuconform_blocked_by() -> None:
        """Skip as "blocked by <check>" when the layer's first check (host or API server answers)
        or a prerequisite named in ``needs`` fails on the same target: node, cluster and kubeflow
        checks. Autouse fixtures are set up first: a blocked check's own fixtures (pods, jobs) are
        never made."""
        item = setting_up(config)
        reason = gating.blocked_by(item, item._request.getfixturevalue)
        if reason:
            pytest.skip(reason)

    @pytest.fixture(scope="module")
    def _gpuconform_host():
        """The host of the check being set up (plugin/hosts.py parametrizes it, indirectly), read from
        the check's parameters: a fixture asking for ``request`` (for ``request.param``) makes pytest
        build a fixture definition for it on every check, 3 % of a 100-host run's CPU (issue #27)."""
        return setting_up(config).callspec.params[hosts.PARAM]

    # ``node`` and ``expected`` follow testinfra's ``host`` (module-scoped): made once per module
    # and host, not once per check, as thousands of items would otherwise pay for; closed over the
    # config, they ask for no other fixture of the suite (each one more is looked up on every check)
    @pytest.fixture(scope="module")
    def node(host) -> NodeFacts:
        """Facts of the host under test, gathered once per host."""
        return node_facts(config, host)

    @pytest.fixture(scope="module")
    def expected(host) -> profile_mod.NodeExpectations:
        """What the profile expects of this host (defaults + matching groups)."""
        return expectations(config, host)

    plugin = types.ModuleType(f"{__name__}.run")
    plugin._gpuconform_config = _gpuconform_config
    plugin._gpuconform_blocked_by = _gpuconform_blocked_by
    plugin.node, plugin.expected, plugin._gpuconform_host = node, expected, _gpuconform_host
    return plugin


@pytest.fixture(scope="session")
def _probe_pool(_gpuconform_config: pytest.Config):
    yield probe_pool(_gpuconform_config)
    _close_pool(_gpuconform_config)


def pytest_collection_finish(session: pytest.Session) -> None:
    # pytest calls this also when Ctrl-C or SIGTERM ends the collection half-way: the run ends as
    # interrupted then, not with the prerequisites of the modules it never reached "unknown"
    if sys.exc_info()[1] is None:
        gating.load_prerequisites(session)
