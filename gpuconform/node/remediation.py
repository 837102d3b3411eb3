"""Companion fixes of the node checks: the script in ``remediation/`` that fixes a failed check, with
which values from the host's facts and the profile, and how it is sent over the connection the
checks used. Each check's companion is declared by its topic (:mod:`gpuconform.node.topics`); the
report shows it beside the check's own fix, never in its place.

The library is handed facts and expectations; it does not read the profile or run pytest.
A script runs on the host as ``env VAR=… sh -c '<lib.sh + script>' <name> [--apply]``: nothing is
copied to the host, and the script acts on the host's own root (the root of a ``chroot://``
target, the machine of ``local://``, the host at the other end of ``ssh://``).
"""
from __future__ import annotations

import dataclasses
import re

from gpuconform.node.collect import run_on_host
from gpuconform.node.facts import NodeFacts
from gpuconform.node.topic import SOURCE_LIB, Fix
from gpuconform.node.topics import COMPANIONS, ORDER

__all__ = ["COMPANIONS", "ORDER", "SOURCE_LIB", "Fix", "companion", "ordered", "ScriptRun", "run_script", "outcome"]


def companion(check_id: str, facts: NodeFacts | None, expected, param: str | None) -> Fix | None:
    """The companion fix of a failed check on this host, or None."""
    declared = COMPANIONS.get(check_id)
    if declared is None or facts is None or facts.error or expected is None:
        return None
    try:
        return declared.fix(facts, expected, param)
    except Exception:  # a fact the script's values need could not be read: the check's own fix stands alone
        return None


def ordered(fixes: list[Fix]) -> list[Fix]:
    """Distinct fixes in the order they must run."""
    unique = list(dict.fromkeys(fixes))
    return sorted(unique, key=lambda f: ORDER.index(f.script) if f.script in ORDER else len(ORDER))


@dataclasses.dataclass(frozen=True)
class ScriptRun:
    """What a script said: its exit status and output, and the reboot it asks for."""
    rc: int
    output: str

    @property
    def failed(self) -> bool:
        return self.rc != 0

    @property
    def reboot_reasons(self) -> list[str]:
        return re.findall(r"^reboot required: (.*)$", self.output, re.MULTILINE)

    @property
    def nothing_to_do(self) -> bool:
        return self.rc == 0 and "nothing to do" in self.output


def run_script(host, fix: Fix, apply: bool) -> ScriptRun:
    """Run ``fix`` on a testinfra host over its connection; transport errors are a failed run."""
    try:
        res = run_on_host(host, fix.command(apply))
    except Exception as exc:  # ssh gone, chroot missing: the fix did not run
        return ScriptRun(255, f"could not run {fix.script} on the host: {type(exc).__name__}: {exc}")
    return ScriptRun(res.rc, (res.stdout + res.stderr).strip())


def outcome(apply: bool, run: ScriptRun, rechecked: str | None) -> tuple[str, str]:
    """(state, why) of one failed check after its script: ``rechecked`` is None when the check
    now passes, else the re-check's message."""
    if not apply:
        return "planned", "dry run: nothing changed"
    if run.failed:
        return "fix failed", f"{run.output.splitlines()[-1] if run.output else f'exit {run.rc}'}"
    if rechecked is None:
        return "fixed", "the re-check passes"
    if run.reboot_reasons:
        return "reboot required", "; ".join(run.reboot_reasons)
    return "fix applied", f"the re-check still fails: {rechecked}"
