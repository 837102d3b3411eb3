"""The environment the benchmarks run the suite in: this one, with Python's default bytecode cache.

A machine may set PYTHONDONTWRITEBYTECODE (this one does): every run would then compile the
suite's modules and rewrite its checks' asserts again, about 0.7 s of a run's start that a user's
second run never pays. The benchmarks measure runs as users make them, and say so."""
from __future__ import annotations

import os
import resource

NOTE = "bytecode cache on (Python's default)"


def suite_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def children_cpu() -> float:
    """User+system CPU seconds of this process's finished children (the suite's runs) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime
