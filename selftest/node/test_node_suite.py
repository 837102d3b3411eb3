"""The real node suite against every simulated host: each scenario fails exactly its checks.

One run of ``pytest -m node`` over all SSH nodes (session fixture ``node_results``); one test per
scenario compares the failing checks with ``expected.EXPECTED``. A second, small run goes through
testinfra's chroot backend to prove that transport too.
"""
from __future__ import annotations

import re

import pytest

from expected import EXPECTED, Expect
from conftest import by_scenario, run_node_suite
from testbed.hosts import rootfs, scenarios

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


@pytest.mark.parametrize("scenario", scenarios.names())
def test_scenario_fails_exactly_its_checks(scenario, node_results):
    assert_scenario(scenario, node_results.get(scenario, []), EXPECTED[scenario])


def test_every_result_belongs_to_a_scenario(node_results):
    strangers = sorted(set(node_results) - set(scenarios.names()))
    assert not strangers, f"results for hosts that are no scenario: {strangers}"


CHROOT_SCENARIOS = ("gpu-good", "dkms-added")


def test_chroot_backend(tmp_path_factory):
    """The same suite through testinfra's chroot backend (``--hosts=chroot:///abs/root``)."""
    if not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0:
        pytest.skip("chroot needs root")
    base = tmp_path_factory.mktemp("chroots")
    roots = [rootfs.render(scenarios.build(name), base / name / "root") for name in CHROOT_SCENARIOS]
    proc, results = run_node_suite("--hosts=" + ",".join(f"chroot://{root}" for root in roots),
                                   report_dir=base / "reports")
    grouped = by_scenario(results)
    assert set(grouped) == set(CHROOT_SCENARIOS), (
        f"chroot hosts reported as {sorted(grouped)}, expected {list(CHROOT_SCENARIOS)}:\n"
        f"{proc.stdout[-2000:]}")
    for name in CHROOT_SCENARIOS:
        assert_scenario(f"chroot {name}", grouped[name], EXPECTED[name])
