"""The environment the benchmarks run the suite in: this one, with Python's default bytecode cache.

A machine may set PYTHONDONTWRITEBYTECODE (this one does): every run would then compile the
suite's modules and rewrite its checks' asserts again, about 0.7 s of a run's start that a user's
second run never pays. The benchmarks measure runs as users make them, and say so."""
from __future__ import annotations

import os
import re
import resource
import sys
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


#: runs argv[1:] as its only child and writes that child's largest resident set (bytes) last on stderr
_PEAK = ("import resource, subprocess, sys\nrc = subprocess.call(sys.argv[1:])\n"
         "print(f'peak RSS {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}', file=sys.stderr)\n"
         "sys.exit(rc)")


def with_peak_rss(cmd: list[str]) -> list[str]:
    """``cmd`` run under a small parent that reports its peak memory (read with :func:`peak_rss`)."""
    return [sys.executable, "-c", _PEAK, *cmd]


def peak_rss(stderr: str) -> float | None:
    """The peak resident set in MB that :func:`with_peak_rss` wrote, None when it wrote none."""
    found = re.findall(r"^peak RSS (\d+)$", stderr, re.M)
    return int(found[-1]) / 1e6 if found else None
