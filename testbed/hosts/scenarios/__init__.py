"""Simulated GPU hosts as data: one good H100 worker, good variants, and single-fault patches.

* :mod:`.model` -- what a host *is* (:class:`Scenario` and its parts);
* :mod:`.good`  -- the good hosts;
* :mod:`.faults` -- one fault each, made on a good host as a real host with it would differ;
* here: the catalog (:func:`names`, :func:`build`).
"""
from __future__ import annotations

from typing import Callable

from testbed.hosts.scenarios.faults import FAULT_BASE, FAULTS, Fault, fault  # noqa: F401 - the catalog's names
from testbed.hosts.scenarios.good import cdi_debian, dcgm_good, good_debian, good_debian_upgraded, good_mig, gpu_good
from testbed.hosts.scenarios.model import *  # noqa: F403 - the model's names, as before the split
from testbed.hosts.scenarios.model import Scenario

GOOD: dict[str, Callable[[], Scenario]] = {
    "gpu-good": gpu_good,
    "good-mig": good_mig,
    "good-debian": good_debian,
    "upgraded-debian": good_debian_upgraded,
    "cdi-debian": cdi_debian,
    "dcgm-good": dcgm_good,
}


def names() -> list[str]:
    """Every scenario name, good ones first."""
    return [*GOOD, *FAULTS]


def build(name: str, on: str | None = None) -> Scenario:
    """The scenario called ``name``: a good host, or a good host (the H100 worker unless ``on``
    or the fault itself names another) with one fault."""
    if name in GOOD:
        return GOOD[name]()
    try:
        description, apply = FAULTS[name]
    except KeyError:
        raise KeyError(f"unknown scenario {name!r}; known: {', '.join(names())}") from None
    s = GOOD[on or FAULT_BASE.get(name, "gpu-good")]().clone(name, description)
    apply(s)
    return s
