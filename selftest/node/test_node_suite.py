"""The real node suite against every simulated host: each scenario fails exactly its checks.

One run of ``pytest -m node`` over all SSH nodes (session fixture ``node_results``); one test per
scenario compares the failing checks with ``expected.EXPECTED``. A second, small run goes through
testinfra's chroot and paramiko backends to prove those transports too.
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET

import pytest

from expected import EXPECTED
from harness import PROFILE, SLOWEST, assert_scenario, by_scenario, run_node_suite, run_over_every_node
from runner import run_suite
from testbed.hosts import rootfs, scenarios


@pytest.mark.parametrize("scenario", scenarios.names())
def test_scenario_fails_exactly_its_checks(scenario, node_results):
    assert_scenario(scenario, node_results.get(scenario, []), EXPECTED[scenario])


def test_every_result_belongs_to_a_scenario(node_results):
    strangers = sorted(set(node_results) - set(scenarios.names()))
    assert not strangers, f"results for hosts that are no scenario: {strangers}"


CHROOT_SCENARIOS = ("gpu-good", "dkms-added")


def test_chroot_backend(tmp_path_factory):
    """The same suite through testinfra's chroot backend (``--hosts=chroot:///abs/root``)."""
    if os.geteuid() != 0:
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


PARAMIKO_SCENARIOS = ("gpu-good", "dkms-added", "sig-enforce-blocks-driver")


def test_paramiko_backend(ssh_nodes, tmp_path_factory):
    """The same suite through testinfra's paramiko backend (``--hosts=paramiko://root@NAME``)."""
    proc, results = run_node_suite("--hosts=" + ",".join(f"paramiko://root@{n}" for n in PARAMIKO_SCENARIOS),
                                   f"--ssh-config={ssh_nodes.ssh_config}",
                                   report_dir=tmp_path_factory.mktemp("paramiko-reports"))
    grouped = by_scenario(results)
    assert set(grouped) == set(PARAMIKO_SCENARIOS), f"paramiko hosts reported as {sorted(grouped)}:\n{proc.stdout[-2000:]}"
    for name in PARAMIKO_SCENARIOS:
        assert_scenario(f"paramiko {name}", grouped[name], EXPECTED[name])


def test_hosts_from_the_profile(tmp_path_factory):
    """Without --hosts, the profile's `hosts:` list names the hosts."""
    import yaml
    base = tmp_path_factory.mktemp("profile-hosts")
    root = rootfs.render(scenarios.build("dkms-added"), base / "dkms-added" / "root")
    doc = yaml.safe_load(PROFILE.read_text())
    doc["hosts"] = [f"chroot://{root}"]
    profile = base / "profile.yaml"
    profile.write_text(yaml.safe_dump(doc))
    proc, doc = run_suite("-m", "node", "-q", f"--profile={profile}", report_dir=base / "reports")
    hosts = {r["host"] for r in doc["results"]}
    assert hosts == {str(root)}, f"results name hosts {sorted(hosts)}:\n{proc.stdout[-2000:]}"
    assert_scenario("dkms-added from the profile", doc["results"], EXPECTED["dkms-added"])


def _junit_cases(path) -> list[tuple]:
    """Each testcase's name, file and line, outcome and message (an object's address, which
    differs between two processes, left out), a skip's place and reason, and properties."""
    return [(c.get("classname"), c.get("name"), c.get("file"), c.get("line"),
             *[(e.tag, re.sub(r" at 0x[0-9a-f]+", "", e.get("message") or ""), e.text if e.tag == "skipped" else None)
               for e in c if e.tag != "properties"],
             tuple((p.get("name"), p.get("value")) for p in c.iter("property")))
            for c in ET.parse(path).getroot().iter("testcase")]


def _last_line(proc) -> str:
    return re.sub(r" in [\d.]+s.*", "", proc.stdout.strip().splitlines()[-1])


RESULT_FIELDS = ("nodeid", "check_id", "param", "host", "verdict", "message", "evidence", "remediation",
                 "blocked_by", "retries")


def test_checks_run_directly_as_pytest_would_run_them(ssh_nodes, node_suite_run, tmp_path_factory):
    """Node checks run without pytest's fixture setup (gpuconform/plugin/direct.py): none of
    their fixtures is set up by pytest (``--setup-show`` lists none), and a run with that module
    blocked (``-p no:gpuconform-direct``: every check set up by pytest) gives the same results
    (pass, fail, error, blocked, skipped), the same JUnit testcases (where each check is: its
    file and line; where a skip is: its check's) and the same counts, over every scenario."""
    direct_proc, direct_results, direct_dir = node_suite_run
    report_dir = tmp_path_factory.mktemp("node-suite-no-direct")
    proc, results = run_over_every_node(ssh_nodes, report_dir, "-p", "no:gpuconform-direct")
    assert "SETUP    M node" not in direct_proc.stdout, direct_proc.stdout[-3000:]
    assert "SETUP    M node" in proc.stdout, proc.stdout[-3000:]
    verdicts = {r["verdict"] for r in results}
    assert {"pass", "fail", "error", "skip"} <= verdicts and any(r.get("blocked_by") for r in results), verdicts
    assert any(r.get("remediation") for r in results) and any(r.get("evidence") for r in results)
    assert [tuple(r[f] for f in RESULT_FIELDS) for r in direct_results] == \
        [tuple(r[f] for f in RESULT_FIELDS) for r in results]
    cases = _junit_cases(direct_dir / "junit.xml")
    assert all(case[2] and case[3] for case in cases), cases[:3]
    # a skip (blocked, or the profile's) is placed at its check, never at the gate or a fixture
    skips = [e[2] for case in cases for e in case[4:-1] if e[0] == "skipped"]
    assert skips and all(re.match(r"\S*/tests/node/test_\w+\.py:\d+: ", text) for text in skips), sorted(set(skips))[:5]
    assert cases == _junit_cases(report_dir / "junit.xml")
    assert _last_line(direct_proc) == _last_line(proc), (direct_proc.stdout[-500:], proc.stdout[-500:])
    # a check's wait for its host's probe is its setup's time, as the node fixture's under pytest
    for run in (direct_proc, proc):
        slowest = run.stdout.split(f"slowest {SLOWEST} durations", 1)[-1]
        assert re.search(r"(?m)^\d+\.\d+s setup +tests/node/", slowest), run.stdout[-3000:]
