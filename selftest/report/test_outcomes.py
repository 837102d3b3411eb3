"""One outcome channel: what a check found (pass, fail, error = could not check, blocked, skip by
profile, waived) reaches the JSON, JUnit, the terminal and the exit code as the same verdict."""
from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET

import pytest

from report_harness import hosts_arg, run
from testbed.hosts import rootfs, scenarios

DKMS_EXIT_3 = """#!/bin/sh
case "$1" in
  --version) echo "dkms-3.0.11" ;;
  *) echo "Error! Could not locate dkms.conf file." >&2; exit 3 ;;
esac
"""
SELECT = "dkms_nvidia or containerd"


@pytest.fixture(scope="module")
def broken_host(tmp_path_factory):
    """A good worker whose `dkms status` exits 3 (could not check) and that has no containerd at
    all while the profile says `engine: containerd` (a failure, with its fix)."""
    root = rootfs.render(scenarios.build("gpu-good"), tmp_path_factory.mktemp("hosts") / "broken")
    (root / "usr/sbin/dkms").unlink()
    (root / "usr/sbin/dkms").write_text(DKMS_EXIT_3)
    (root / "usr/sbin/dkms").chmod(0o755)
    (root / "usr/bin/containerd").unlink()
    shutil.rmtree(root / "etc/containerd")
    return root


@pytest.fixture(scope="module")
def broken_run(broken_host, tmp_path_factory):
    folder = tmp_path_factory.mktemp("outcomes")
    return run(folder, "-m", "node", "-k", SELECT, *hosts_arg([broken_host]),
               f"--junitxml={folder / 'junit.xml'}")


def by_id(doc) -> dict[str, dict]:
    return {r["check_id"]: r for r in doc["results"]}


def test_verdicts_of_each_kind(broken_run):
    r = by_id(broken_run.doc)
    assert {k: v["verdict"] for k, v in r.items()} == {
        "node.dkms.nvidia_installed": "error", "node.containerd.installed": "fail",
        "node.containerd.nvidia_runtime": "blocked", "node.containerd.nvidia_default": "blocked",
        "node.containerd.cdi": "blocked", "node.containerd.config_version": "blocked"}, broken_run.output()
    assert r["node.dkms.nvidia_installed"]["message"] == "could not check: `dkms status` failed: " \
                                                         "Error! Could not locate dkms.conf file."
    assert r["node.containerd.nvidia_runtime"]["blocked_by"] == "node.containerd.installed"


def test_declared_engine_missing_fails_with_its_fix(broken_run):
    r = by_id(broken_run.doc)["node.containerd.installed"]
    assert r["message"] == "containerd is not installed, but the profile says container_runtime.engine: containerd"
    assert r["remediation"] == "dnf install containerd.io"


def test_error_only_run_exits_1(broken_host, tmp_path):
    r = run(tmp_path, "-m", "node", "-k", "dkms_nvidia", *hosts_arg([broken_host]))
    assert [x["verdict"] for x in r.doc["results"]] == ["error"], r.output()
    assert r.doc["verdict"]["word"] == "REJECTED" and r.proc.returncode == 1, r.output()
    assert re.search(r"\b1 error\b", r.proc.stdout.splitlines()[-3] + r.proc.stdout.splitlines()[-1]), r.output()
    assert "Traceback" not in r.proc.stdout and "could not check: `dkms status` failed" in r.proc.stdout


def test_junit_error_failure_and_blocked(broken_run):
    suite = ET.parse(broken_run.folder / "junit.xml").getroot().find("testsuite")
    assert (suite.get("errors"), suite.get("failures"), suite.get("skipped")) == ("1", "1", "4")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    dkms = next(c for n, c in cases.items() if n.startswith("test_dkms_nvidia"))
    assert [e.tag for e in dkms if e.tag != "properties"] == ["error"]
    assert dkms.find("error").get("message").startswith("could not check: `dkms status` failed")
    blocked = [c.find("skipped") for n, c in cases.items() if "nvidia_runtime" in n or "default_runtime" in n]
    assert [b.get("message").split(" (")[0] for b in blocked] == ["blocked by node.containerd.installed"] * 2


def test_no_reports_still_draws_the_exit_code(broken_host, tmp_path):
    r = run(tmp_path, "-m", "node", "-k", "dkms_nvidia", *hosts_arg([broken_host]), "--no-reports")
    assert r.proc.returncode == 1 and "gpuconform: REJECTED" in r.proc.stdout, r.output()


def test_help_documents_the_exit_codes(tmp_path):
    r = run(tmp_path, "--help")
    text = " ".join(r.proc.stdout.split())
    assert "exit code: 0 ACCEPTED" in text and "1 REJECTED (a failure, an error = could not check" in text, text[-2000:]
