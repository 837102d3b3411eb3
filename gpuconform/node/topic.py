"""What a node topic declares, and what every topic's facts stand on.

A topic (:mod:`gpuconform.node.topics`) is one module per concern of a host (the linker, DKMS,
nouveau, ...). It declares, as module-level names:

- ``STEPS``: its probe steps (:class:`Step`), run in the probe's one round trip;
- ``TOOLS``: tools whose presence on the host is itself a fact (the ``tools`` step lists them all);
- ``Facts``: a class of typed accessors over its steps, each handing a section to the parser of its
  format (:mod:`gpuconform.parsers`); :class:`gpuconform.node.facts.NodeFacts` is built of them all;
- its checks' text (:class:`CheckText`: title, fix, evidence), which the check in ``tests/node/``
  spreads into its ``@check("<id>", **TEXT)``;
- ``COMPANIONS``: check id → :class:`Companion`, the script in ``remediation/`` that fixes a failure
  of it, shown beside the check's fix (never in its place) and run by ``--remediate``.

An accessor either returns a value or raises ``CannotTell`` with the reason the fact could not be
read (tool missing, file unreadable, probe timed out). "Cannot tell" is never "false".
"""
from __future__ import annotations

import dataclasses
import shlex
from functools import cached_property
from typing import Callable, Mapping, TypedDict

from gpuconform import resources
from gpuconform.errors import CannotTell
from gpuconform.parsers import host


@dataclasses.dataclass(frozen=True)
class Section:
    """What one probe step printed."""
    rc: int | None
    out: str
    err: str
    timed_out_s: int | None = None  # killed by its command timeout (profile timeouts.command_s)

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def failure(self) -> str:
        """Why the step did not succeed, in a few words: its timeout, its stderr or its exit code."""
        if self.timed_out_s is not None:
            return f"timed out after {self.timed_out_s} s (timeouts.command_s)"
        return self.err.strip() or f"exit {self.rc}"


@dataclasses.dataclass(frozen=True)
class Step:
    """One probe section: its name, the POSIX sh it runs on the host (in its own ``sh -c``; ``$T``
    bounds a command by timeouts.command_s, ``$kver`` is the running kernel, ``$GPUC_SYSCTLS``,
    ``$GPUC_RUNTIMES``, ``$GPUC_UNITS`` are the :class:`~gpuconform.node.probe.ProbeInputs`), and
    the command as the report shows it beside the section's output."""
    name: str
    command: str
    shown: str


def nvidia_smi_query(fields: tuple[str, ...]) -> str:
    """``nvidia-smi --query-gpu=<fields> --format=csv,noheader``."""
    return "nvidia-smi --query-gpu=" + ",".join(fields) + " --format=csv,noheader"


def query_step(name: str, fields: tuple[str, ...]) -> Step:
    """A probe step running one ``nvidia-smi --query-gpu`` (bounded by ``$T``)."""
    return Step(name, f"$T {nvidia_smi_query(fields)}", nvidia_smi_query(fields))


def tools_step(tools: tuple[str, ...]) -> Step:
    """The ``tools`` step: ``name=path`` of each of ``tools`` the host has."""
    listed = " ".join(tools)
    return Step("tools", f'for t in {listed}; do p=$(command -v "$t" 2>/dev/null) && echo "$t=$p"; done; true',
                f"command -v {listed}")


class CheckText(TypedDict):
    """A check's words, declared by its topic: ``@check("<id>", **TEXT, needs=[...])``."""
    title: str
    fix: str | Mapping[str, str]
    evidence: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Fix:
    """One companion script with this host's values: ``env`` is what the script is given."""
    script: str
    env: tuple[tuple[str, str], ...] = ()

    def text(self) -> str:
        """The script as the report shows it beside the check's fix: how to run it by hand (it
        prints its plan; ``--apply`` acts), or from the suite."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)
        return (f"{env + ' ' if env else ''}remediation/{self.script} [--apply]  "
                f"(or pytest -m node --remediate=apply --remediate-checks=…)")

    def command(self, apply: bool) -> str:
        """The shell command that runs the script on the host (lib.sh inlined)."""
        lib = resources.remediation_script("lib.sh")
        body = resources.remediation_script(self.script)
        assert SOURCE_LIB in body, f"{self.script} does not source lib.sh as {SOURCE_LIB}"
        program = body.replace(SOURCE_LIB, lib, 1)
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)
        return (f"env {env} " if env else "") + (f"sh -c {shlex.quote(program)} {self.script}"
                                                 + (" --apply" if apply else ""))


SOURCE_LIB = '. "$(dirname "$0")/lib.sh"'


@dataclasses.dataclass(frozen=True)
class Companion:
    """A check's companion script and the values it takes from the host's facts and the profile's
    expectations (``values`` returns None when no script fits this host)."""
    script: str
    values: Callable[..., tuple[tuple[str, str], ...] | None] = lambda facts, expected, param: ()

    def fix(self, facts, expected, param: str | None) -> Fix | None:
        env = self.values(facts, expected, param)
        return None if env is None else Fix(self.script, env)


def failed(sec: Section, fallback: str = "") -> str:
    """``timed out after N s (…)``, or ``failed: <stderr, else fallback, else the exit code>``."""
    if sec.timed_out_s is not None:
        return sec.failure
    return f"failed: {sec.err.strip() or fallback.strip() or f'exit {sec.rc}'}"


class Base:
    """Raw access to a host's probe sections, which every topic's facts read through."""

    #: True when ``error`` says the host could not be checked at all (a k8s-node:// probe pod
    #: that never ran): an error, not the host failing to answer.
    could_not_check = False

    def __init__(self, host: str, sections: dict[str, Section], error: str | None = None):
        self.host = host
        self.sections = sections
        self.error = error

    def section(self, name: str) -> Section:
        if self.error:
            raise CannotTell(self.error)
        sec = self.sections.get(name)
        if sec is None:
            raise CannotTell(f"the probe returned no '{name}' section (did it time out?)")
        return sec

    def _file(self, name: str, what: str) -> str:
        sec = self.section(name)
        if not sec.ok:
            raise CannotTell(f"cannot read {what}: {sec.failure}")
        return sec.out

    # -- tools (the registry's ``tools`` step) ----------------------------------------------
    @cached_property
    def tools(self) -> dict[str, str]:
        return host.parse_tools(self.section("tools").out)

    def tool(self, name: str) -> str | None:
        """Path of a tool on the host, None when absent."""
        return self.tools.get(name)

    def require_tool(self, name: str, why: str = "") -> str:
        path = self.tool(name)
        if not path:
            raise CannotTell(f"`{name}` is not installed on the host" + (f" ({why})" if why else ""))
        return path

    def _query(self, sec: Section, what: str, parse):
        """A ``nvidia-smi --query-gpu`` section's rows; CannotTell when it failed or cannot be read."""
        if not sec.ok:
            raise CannotTell(f"{what} {failed(sec, sec.out)}")
        try:
            return parse(sec.out)
        except ValueError as exc:
            raise CannotTell(f"{what} printed what cannot be read: {exc}") from None

    def _per_gpu(self, step: str, what: str, parse) -> list:
        """One row per GPU nvidia-smi listed (the driver topic's ``gpus``), from the query of probe
        step ``step``."""
        rows = self._query(self.section(step), what, parse)
        missing = sorted({g.index for g in self.gpus} - {r.index for r in rows})  # type: ignore[attr-defined]
        if missing:
            raise CannotTell(f"{what} printed no row for GPU {', '.join(map(str, missing))}")
        return rows
