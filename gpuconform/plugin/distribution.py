"""The order of the run and, under pytest-xdist, its distribution: host by host.

* Order: the node checks of one host run together, hosts in the order given, as soon as that
  host's probe lands (probes run in that order, ``parallel_probes`` at once: plugin/fixtures.py), so the
  probes' fan-out and the checks overlap. One test per check x host stays (JUnit, the report).
* ``-n N``: every check of one host goes to one worker, so each host is probed once. xdist's own
  ``loadgroup`` depends on a node-id rewrite on the workers that pytest 9.2 undid (pytest-xdist
  issue 1386, open at xdist 3.8.0); this scheduler reads the host out of the node id on the
  controller instead, under any pytest the suite allows.
"""
from __future__ import annotations

import pytest

from gpuconform.plugin.hosts import PARAM as HOST_PARAM  # ids: backend.get_pytest_id(), as testinfra's


def host_id(item: pytest.Item) -> str | None:
    host = getattr(getattr(item, "callspec", None), "params", {}).get(HOST_PARAM)
    return host.backend.get_pytest_id() if host is not None else None


@pytest.hookimpl(trylast=True)  # after pytest's own reordering by fixture scope
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Stable: checks without a host keep their place before the hosts' checks; each host's checks
    keep their order."""
    from gpuconform.plugin.hosts import all_hosts
    rank = {h.backend.get_pytest_id(): i for i, h in enumerate(all_hosts(config))}
    keys = []
    for item in items:
        host = host_id(item)
        keys.append(-1 if host is None else rank.setdefault(host, len(rank)))
    order = sorted(range(len(items)), key=keys.__getitem__)
    items[:] = [items[i] for i in order]


@pytest.hookimpl(optionalhook=True)  # only with pytest-xdist, on its controller
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.option.dist not in ("load", "loadgroup"):
        return None  # the user chose another distribution (loadfile, each...): theirs
    from gpuconform.plugin.hosts import all_hosts
    from xdist.scheduler import LoadScopeScheduling

    class HostScheduling(LoadScopeScheduling):
        """Scope = the host a node id names; other checks by module, as ``--dist loadscope``."""
        hosts = sorted((h.backend.get_pytest_id() for h in all_hosts(config)), key=len, reverse=True)

        def _split_scope(self, nodeid: str) -> str:
            params = nodeid.partition("[")[2]
            # longest first: ssh://root@gpu-10 is not taken for ssh://root@gpu-1
            return next((h for h in self.hosts if h in params), None) or super()._split_scope(nodeid)

    return HostScheduling(config, log)
