"""The probe pool: the one contract by which the run gets each host's facts, whatever the host's
kind. Two pools implement it: :class:`gpuconform.node.collect.FactsPool` (hosts this machine
reaches itself: ``ssh://``, ``paramiko://``, ``local://``, ``chroot://``) and
:class:`gpuconform.node.k8s_node.pods.ProbePods` (``k8s-node://``: a probe pod per node).
:class:`ByKind` is one pool over both: it hands each host to the pool of its kind, made on first
use, so that no caller asks what kind a host is.

Every pool holds each probe to one deadline, the profile's ``timeouts.probe_s`` (``deadline_s``),
counted from when the probe started (a pool slot, a pod's container), and the probe on the host to
:func:`gpuconform.node.collect.host_deadline_s` of it.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Protocol

from gpuconform.node.facts import NodeFacts


def label(host: Any) -> str:
    """How a host (a testinfra host) is named in results and matched by profile groups."""
    return host.backend.get_hostname()


class ProbePool(Protocol):
    #: the profile's ``timeouts.probe_s``: how long a probe may run once started
    deadline_s: float

    def submit(self, hosts: Iterable[Any]) -> None:
        """Start probing ``hosts`` (those not asked for yet), in the order given, in the background."""

    def get(self, host: Any) -> NodeFacts:
        """The host's facts, probed once per run (submitted now if it was not); within the deadline
        an error saying why where the probe did not finish."""

    def reprobe(self, host: Any) -> NodeFacts:
        """The host probed once more, under the same deadline (after ``--remediate=apply``)."""

    def close(self) -> list[str]:
        """End what is still running and remove what the pool created; waits for no probe.
        Returns lines for the run's summary (what it did, what it could not clean up)."""


class ByKind:
    """One pool over the pools of each host kind (a testinfra connection type): ``pools`` maps a
    kind to the maker of its pool, ``other`` makes the pool of every other kind."""

    def __init__(self, pools: dict[str, Callable[[], ProbePool]], other: Callable[[], ProbePool], deadline_s: float):
        self._makers = pools
        self._other = other
        self.deadline_s = deadline_s
        self._made: dict[str | None, ProbePool] = {}
        self._closed = False

    def _pool(self, host: Any) -> ProbePool:
        kind = host.backend.get_connection_type()
        key = kind if kind in self._makers else None
        if key not in self._made:
            self._made[key] = self._makers[kind]() if key is not None else self._other()
        return self._made[key]

    def submit(self, hosts: Iterable[Any]) -> None:
        by_pool: dict[int, tuple[ProbePool, list]] = {}
        for host in hosts:
            pool = self._pool(host)
            by_pool.setdefault(id(pool), (pool, []))[1].append(host)
        for pool, group in by_pool.values():
            pool.submit(group)

    def get(self, host: Any) -> NodeFacts:
        return self._pool(host).get(host)

    def reprobe(self, host: Any) -> NodeFacts:
        return self._pool(host).reprobe(host)

    def close(self) -> list[str]:
        if self._closed:
            return []
        self._closed = True
        return [line for pool in self._made.values() for line in pool.close()]
