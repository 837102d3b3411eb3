"""Running the real node suite against simulated hosts and judging its results."""
from __future__ import annotations

import collections
import re
import subprocess
from pathlib import Path

from expected import Expect
from runner import run_suite
from testbed.hosts import net, scenarios

REPO = Path(__file__).resolve().parents[2]
STATE = net.state_folder("selftest-hosts")
PROFILE = REPO / "profiles" / "seed-h100.yaml"
SUITE_TIMEOUT_S = 300


def run_node_suite(*args: str, report_dir: Path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    """``pytest -m node`` with the seed profile, in a subprocess; returns it and its results."""
    proc, doc = run_suite("-m", "node", "-q", f"--profile={PROFILE}", *args,
                          report_dir=report_dir, timeout=SUITE_TIMEOUT_S)
    assert doc, (f"the node suite wrote no JSON report (exit {proc.returncode}):\n"
                 f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return proc, doc["results"]


#: how many of the slowest phases the node suite's run lists (``--durations``)
SLOWEST = 5


def run_over_every_node(ssh_nodes, report_dir, *more: str):
    """The node suite over every SSH node, with ``--setup-show``, the :data:`SLOWEST` phases
    listed and JUnit in ``report_dir`` (its xunit1 family: each testcase also names its file and
    line, the item's location)."""
    return run_node_suite(f"--hosts={ssh_nodes.hosts_arg}", f"--ssh-config={ssh_nodes.ssh_config}", "--setup-show",
                          f"--durations={SLOWEST}", f"--junitxml={report_dir / 'junit.xml'}", "-o",
                          "junit_family=xunit1", *more, report_dir=report_dir)


def by_scenario(results: list[dict]) -> dict[str, list[dict]]:
    """Results grouped by scenario; a chroot host (``<state>/<scenario>/root``) counts as its scenario."""
    known = set(scenarios.names())
    grouped: dict[str, list[dict]] = collections.defaultdict(list)
    for r in results:
        host = r.get("host") or ""
        parts = Path(host.split("://")[-1]).parts
        name = host if host in known else next((p for p in reversed(parts) if p in known), host)
        grouped[name].append(r)
    return grouped


NOT_PASSING = ("fail", "error")


def _key(r: dict) -> str:
    return r["check_id"] if r.get("param") in (None, "") else f"{r['check_id']}[{r['param']}]"


def _verdicts(results: list[dict]) -> dict[str, tuple[str, str]]:
    return {_key(r): (r["verdict"], r.get("message") or "") for r in results}


def assert_scenario(name: str, results: list[dict], expect: Expect) -> None:
    assert results, f"the node suite reported nothing for host {name}"
    verdicts = _verdicts(results)
    failing = {k: v for k, v in verdicts.items() if v[0] in NOT_PASSING}
    unexpected = sorted(set(failing) - set(expect.fails))
    missing = sorted(set(expect.fails) - set(failing))
    lines = [f"{k}: {failing[k][0]}: {failing[k][1]}" for k in unexpected]
    lines += [f"{k}: expected to fail, got {verdicts.get(k, ('absent', ''))[0]}: "
              f"{verdicts.get(k, ('', ''))[1]}" for k in missing]
    assert set(failing) == set(expect.fails), (
        f"{name}: failing checks differ from the expectation\n  unexpected failures/errors: "
        f"{unexpected}\n  expected but not failing: {missing}\n  " + "\n  ".join(lines))

    unnamed = [f"{k}: message {failing[k][1]!r} does not match /{pattern}/"
               for k, pattern in expect.fails.items()
               if not re.search(pattern, failing[k][1], re.IGNORECASE)]
    assert not unnamed, f"{name}: the message does not name the cause\n  " + "\n  ".join(unnamed)

    for verdict, wanted in (("blocked", expect.blocked), ("skip", expect.skipped)):
        wrong = {k: verdicts.get(k, ("absent", ""))[0] for k in wanted
                 if verdicts.get(k, ("absent",))[0] != verdict}
        assert not wrong, f"{name}: expected verdict {verdict} for {sorted(wanted)}, got {wrong}"
