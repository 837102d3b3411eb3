"""The remediation fixture (``--remediate=plan|apply``): after the checks, each failed node check
that has a companion script gets it run on the same host over the same connection; with
``apply`` the host is then probed once more, through the run's probe pool and under its deadline,
and each of those checks re-judged on the new facts.

Nothing here runs unless ``--remediate`` is given: the checks stay read-only; only this fixture
writes, and only on the hosts whose checks failed.
"""
from __future__ import annotations

import dataclasses
import inspect

import pytest

from gpuconform.node import remediation
from gpuconform.node.pool import ProbePool
from gpuconform.redact import redact

PLAN, APPLY = "plan", "apply"
OUTPUT_CHARS = 4000  # a script's output kept in the report, from its end
REMEDIATOR = pytest.StashKey["Remediator"]()


def selection(mode: str | None, checks: str | None) -> tuple[str, ...] | None:
    """The check ids to remediate (() = all), None when remediation is off. Bad input raises
    UsageError (one line, exit 4)."""
    if mode is None:
        if checks:
            raise pytest.UsageError("--remediate-checks needs --remediate=plan or --remediate=apply")
        return None
    if mode == APPLY and not checks:
        raise pytest.UsageError("--remediate=apply changes hosts: name the checks to fix with "
                                "--remediate-checks=ID,ID… or --remediate-checks=all")
    if not checks or checks.strip() == "all":
        return ()
    wanted = tuple(c.strip() for c in checks.split(",") if c.strip())
    unknown = [c for c in wanted if c not in remediation.COMPANIONS]
    if unknown or not wanted:
        raise pytest.UsageError(f"--remediate-checks: {', '.join(unknown) or repr(checks)} has no companion "
                                f"script; known: all, {', '.join(sorted(remediation.COMPANIONS))}")
    return wanted


@dataclasses.dataclass
class _Failure:
    check_id: str
    param: str | None
    host: object          # the testinfra host the check ran on
    fix: remediation.Fix
    recheck: object       # the check function
    kwargs: dict          # its arguments, ``node`` replaced by fresh facts at the re-check


class Remediator:
    """Collects the failed checks of this process's hosts, then fixes them host by host."""

    def __init__(self, mode: str, wanted: tuple[str, ...]):
        self.apply = mode == APPLY
        self.wanted = wanted
        self.failures: dict[str, list[_Failure]] = {}
        self.results: list[dict] = []

    def note(self, item: pytest.Item, record: dict, facts, fix: remediation.Fix | None) -> None:
        """Called by the report hook for each final result, with the failure's companion fix."""
        if record["verdict"] != "fail" or record["layer"] != "node" or facts is None:
            return
        if self.wanted and record["check_id"] not in self.wanted:
            return
        host = item.funcargs.get("host")
        if fix is None or host is None:
            return
        names = inspect.signature(item.obj).parameters  # the check's own arguments, to call it again
        self.failures.setdefault(facts.host, []).append(_Failure(
            record["check_id"], record["param"], host, fix, item.obj,
            {n: item.funcargs[n] for n in names if n in item.funcargs}))

    def run(self, pool: ProbePool) -> None:
        """Fix each host's failures; with ``apply``, re-probe it through ``pool`` (the run's)."""
        for label, failures in self.failures.items():
            self._remediate_host(label, failures, pool)
        self.failures = {}

    def _remediate_host(self, label: str, failures: list[_Failure], pool: ProbePool) -> None:
        host = failures[0].host
        runs = {fix: remediation.run_script(host, fix, self.apply)
                for fix in remediation.ordered([f.fix for f in failures])}
        facts = pool.reprobe(host) if self.apply else None  # one re-probe
        for f in failures:
            run = runs[f.fix]
            state, why = remediation.outcome(self.apply, run, _recheck(f, facts) if self.apply else "")
            self.results.append({"host": label, "check_id": f.check_id, "param": f.param,
                                 "script": f.fix.script, "mode": PLAN if not self.apply else APPLY,
                                 "state": state, "reason": why, "fix": f.fix.text(),
                                 # masked before the cut: a secret cut in half no longer matches its pattern
                                 "output": redact(run.output)[-OUTPUT_CHARS:]})

    def take_results(self) -> list[dict]:
        out, self.results = self.results, []
        return out


def _recheck(f: _Failure, facts) -> str | None:
    """None when the check passes on ``facts``, else why it does not."""
    if facts is None or facts.error:
        return f"the host did not answer the re-probe: {getattr(facts, 'error', 'no facts')}"
    kwargs = {**f.kwargs, "node": facts}
    try:
        f.recheck(**{k: v for k, v in kwargs.items() if k in inspect.signature(f.recheck).parameters})
    except AssertionError as exc:
        return str(exc).split("\nassert ")[0]
    except pytest.skip.Exception as exc:
        return f"re-check skipped: {exc.msg}"
    except Exception as exc:  # could not check
        return f"could not re-check: {type(exc).__name__}: {exc}"
    return None


@pytest.fixture(scope="session", autouse=True)
def _gpuconform_remediation(_gpuconform_config: pytest.Config, _probe_pool: ProbePool):
    """After every check of this process has run, fix what failed (registered only with
    --remediate: plugin.py), before the probe pool that re-probes the hosts closes (asked for
    here, it is torn down after this)."""
    remediator = _gpuconform_config.stash[REMEDIATOR]
    yield
    if remediator.failures:
        remediator.run(_probe_pool)
