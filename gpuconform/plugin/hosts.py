"""The run's hosts: the list parsed once (plugin/inputs.py ``HostList``), its ``k8s-node://``
label selectors resolved once, where the hosts are first needed, and the ``host`` fixture
parametrized from it.

The parametrized fixture ``_gpuconform_host`` itself is closed over the config
(plugin/fixtures.py ``run_fixtures``: it reads the host from the check's parameters).

The suite parametrizes the hosts itself instead of letting testinfra's plugin read
``config.option.hosts`` (which would have to be rewritten with the checked list): its ``host``
fixture here overrides testinfra's and stands on :data:`PARAM`, so testinfra's own
parametrization (of ``_testinfra_host``) never applies. Ids and order are testinfra's
(``backend.get_pytest_id()``, sorted), so node ids are those of a plain testinfra run.

Under pytest-xdist the controller resolves the list and hands it to each worker
(``pytest_configure_node``): every worker collects the same hosts, and the API server is asked
once per run.
"""
from __future__ import annotations

import pytest
import testinfra

from gpuconform.plugin import k8s_node_fixtures, keys
from gpuconform.report.record import HOST_PARAM as PARAM  # the parametrized argument behind ``host``
_RESOLVED = pytest.StashKey[tuple]()
_WORKER_KEY = "gpuconform_hosts"
_UNRESOLVED_KEY = "gpuconform_unresolved_hosts"  # a selector that matched nothing: its placeholder host -> why


def specs(config: pytest.Config) -> tuple[str, ...]:
    """The host specs of this run, each ``k8s-node://?selector=`` replaced by its nodes (asked of
    the API server on the first call, once; an xdist worker takes the controller's list)."""
    if _RESOLVED not in config.stash:
        given = config.stash[keys.INPUTS].hosts
        workerinput = getattr(config, "workerinput", {})
        if _WORKER_KEY in workerinput:
            resolved = tuple(workerinput[_WORKER_KEY])
            config.stash[k8s_node_fixtures.UNRESOLVED] = dict(workerinput[_UNRESOLVED_KEY])
        elif given is None:
            resolved = ()
        elif given.selectors:
            resolved = tuple(k8s_node_fixtures.resolve_hosts(config, list(given.specs)))
        else:
            resolved = given.specs
        config.stash[_RESOLVED] = resolved
    return config.stash[_RESOLVED]


def all_hosts(config: pytest.Config) -> list:
    """This run's hosts as testinfra hosts, in the order given ([] when none was given)."""
    given = config.stash[keys.INPUTS].hosts
    found = specs(config)
    if not found:
        return []
    return testinfra.get_hosts(list(found), connection=given.connection, **dict(given.connect))


@pytest.hookimpl(optionalhook=True)  # only with pytest-xdist, on its controller
def pytest_configure_node(node) -> None:
    node.workerinput[_WORKER_KEY] = list(specs(node.config))
    node.workerinput[_UNRESOLVED_KEY] = dict(node.config.stash.get(k8s_node_fixtures.UNRESOLVED, {}))


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One test per host for every check that uses ``host``; with no host given, testinfra's
    local host, as testinfra's plugin would."""
    if PARAM not in metafunc.fixturenames:
        return
    hosts = all_hosts(metafunc.config) or testinfra.get_hosts([None])
    hosts = sorted(hosts, key=lambda h: h.backend.get_pytest_id())
    metafunc.parametrize(PARAM, hosts, ids=[h.backend.get_pytest_id() for h in hosts], scope="module",
                         indirect=True)


@pytest.fixture(scope="module")
def host(_gpuconform_host):
    """The host under test (a testinfra ``Host``): one test per host of the run."""
    return _gpuconform_host
