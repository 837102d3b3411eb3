"""The environment the benchmarks run the suite in: this one, with Python's default bytecode cache.

A machine may set PYTHONDONTWRITEBYTECODE (this one does): every run would then compile the
suite's modules and rewrite its checks' asserts again, about 0.7 s of a run's start that a user's
second run never pays. The benchmarks measure runs as users make them, and say so."""
from __future__ import annotations

import os
import resource
from pathlib import Path

NOTE = "bytecode cache on (Python's default)"


def suite_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def children_cpu() -> float:
    """User+system CPU seconds of this process's finished children (the suite's runs) so far."""
    usage = children_usage()
    return usage["user"] + usage["system"]


def children_usage() -> dict[str, float]:
    """This process's finished children so far: user and system CPU seconds, minor and major page faults."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"user": usage.ru_utime, "system": usage.ru_stime, "minor faults": usage.ru_minflt,
            "major faults": usage.ru_majflt}


#: /proc/stat's first line after "cpu", in clock ticks (proc(5))
CPU_KINDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def machine_cpu() -> dict[str, float]:
    """The machine's CPU seconds so far by kind (all its CPUs together): ``steal`` is time a virtual
    machine's CPUs were ready but the host ran something else."""
    ticks = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:1 + len(CPU_KINDS)]
    return {kind: int(t) / os.sysconf("SC_CLK_TCK") for kind, t in zip(CPU_KINDS, ticks)}


def since(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {k: after[k] - before[k] for k in after}
