"""``--remediate`` over real SSH (and paramiko) on the simulated hosts: for every fault scenario
with a companion script, the plan changes nothing on the host (byte for byte), apply fixes it —
the fixture's own re-probe and a fresh suite run both pass the check, or the host says why a
reboot is required — and a second apply changes nothing. The hosts are rendered afresh after.
"""
from __future__ import annotations

import re

import pytest

from gpuconform.report import model as results_file
from harness import run_node_suite
from testbed.hosts import rootfs, scenarios

#: scenario → check (with its param) → state after --remediate=apply
EXPECTED_STATES = {
    "nouveau-loaded": {"node.nouveau.not_loaded": "reboot required"},
    "nouveau-not-blacklisted": {"node.nouveau.blacklisted": "fixed"},
    "nouveau-in-initramfs": {"node.nouveau.not_in_initramfs": "fixed"},
    "cmdline-missing-sig-enforce": {"node.kernel.cmdline_required[module.sig_enforce=0]": "reboot required"},
    "cmdline-has-lockdown": {"node.kernel.cmdline_forbidden[lockdown]": "reboot required",
                             "node.signing.lockdown": "reboot required"},
    "dkms-added": {"node.dkms.nvidia_installed": "fixed"},
    "dkms-built": {"node.dkms.nvidia_installed": "fixed"},
    "dkms-other-kernel-only": {"node.dkms.nvidia_installed": "fixed"},
    "dkms-broken": {"node.dkms.nvidia_installed": "fix failed"},
    "dkms-wrong-version": {"node.dkms.nvidia_installed": "fix failed"},
    "ld-not-executable": {"node.toolchain.ld_runs": "fixed"},
    "persistenced-inactive": {"node.persistenced.enabled": "fixed", "node.persistenced.active": "fixed",
                              "node.persistenced.running": "fixed"},
    "containerd-no-nvidia-runtime": {"node.containerd.nvidia_runtime": "fixed"},
    "containerd-not-default": {"node.containerd.nvidia_default": "fixed"},
    "bpf-jit-harden-2": {"node.sysctl[net.core.bpf_jit_harden]": "fixed"},
    "mig-pending": {"node.mig.no_pending": "reboot required"},
    "no-kernel-headers": {"node.kernel.headers": "fixed"},
    # no systemd: the daemon cannot run (no script for that), legacy persistence mode is the fallback
    "no-systemd-persistence-off": {"node.gpu.persistence_mode": "fixed"},
    "fabricmanager-mismatch": {"node.fabricmanager.version": "fixed", "node.fabricmanager.active": "fixed"},
    "fabricmanager-inactive": {"node.fabricmanager.active": "fixed"},
    # the loaded driver is not the profile's: no script replaces a driver; fabric manager is left
    # alone (pinning it to the wrong driver would hide the fault)
    "driver-wrong-version": {"node.dkms.nvidia_installed": "fix failed"},
}
#: what a failed fix must say
FIX_FAILED_BECAUSE = {"dkms-broken": "broken", "dkms-wrong-version": "no nvidia 580.95.05 source",
                      "driver-wrong-version": "no nvidia 580.95.05 source"}
PARAMIKO = ("bpf-jit-harden-2", "persistenced-inactive")  # the rest over ssh://
NAMES = sorted(EXPECTED_STATES)


def _key(r: dict) -> str:
    return r["check_id"] + (f"[{r['param']}]" if r.get("param") else "")


def _by_host(doc_remediation: list[dict]) -> dict[str, dict[str, dict]]:
    out: dict[str, dict[str, dict]] = {}
    for r in doc_remediation:
        out.setdefault(r["host"], {})[_key(r)] = r
    return out


@pytest.fixture(scope="module")
def remediated(ssh_nodes, node_results, tmp_path_factory):
    """plan, apply, apply again over the remediable hosts, with their roots' digests in between;
    the hosts are rendered afresh afterwards for the other tests (``node_results`` ran first)."""
    hosts = "--hosts=" + ",".join(f"{'paramiko' if n in PARAMIKO else 'ssh'}://root@{n}" for n in NAMES)
    digests = lambda: {n: rootfs.digest(ssh_nodes.root_of(n)) for n in NAMES}  # noqa: E731
    runs = {"before": digests()}
    for step, args in (("plan", ["--remediate=plan"]),
                       ("apply", ["--remediate=apply", "--remediate-checks=all"]),
                       ("again", ["--remediate=apply", "--remediate-checks=all"])):
        folder = tmp_path_factory.mktemp(f"remediate-{step}")
        proc, results = run_node_suite(hosts, f"--ssh-config={ssh_nodes.ssh_config}", *args, report_dir=folder)
        doc = results_file.read(sorted(folder.glob("*.json"))[-1].read_text())
        html = sorted(folder.glob("*.html"))[-1].read_text()
        runs[step] = {"results": results, "remediation": _by_host(doc["remediation"]), "html": html,
                      "digests": digests(), "stdout": proc.stdout}
    yield runs
    for n in NAMES:
        rootfs.render(scenarios.build(n), ssh_nodes.root_of(n), stage=ssh_nodes.state / ".bin")


@pytest.mark.parametrize("name", NAMES)
def test_plan_shows_the_fix_and_changes_nothing(remediated, name):
    plan = remediated["plan"]["remediation"].get(name, {})
    assert set(plan) == set(EXPECTED_STATES[name]), f"{name}: planned {sorted(plan)}"
    assert all(r["state"] == "planned" and r["mode"] == "plan" and r["output"] for r in plan.values()), plan
    assert remediated["plan"]["digests"][name] == remediated["before"][name], f"{name}: the plan changed the host"


@pytest.mark.parametrize("name", NAMES)
def test_apply_fixes_or_says_why_not(remediated, name):
    applied = remediated["apply"]["remediation"].get(name, {})
    states = {k: r["state"] for k, r in applied.items()}
    assert states == EXPECTED_STATES[name], f"{name}: {states}\n" + "\n".join(
        f"{k}: {r['reason']}\n{r['output']}" for k, r in applied.items())
    for r in applied.values():
        assert r["state"] != "reboot required" or r["reason"], r
        if r["state"] == "fix failed":
            assert FIX_FAILED_BECAUSE[name] in r["output"], r["output"]
    verdicts = {_key(r): r["verdict"] for r in remediated["again"]["results"] if r["host"] == name}
    fixed = [k for k, s in EXPECTED_STATES[name].items() if s == "fixed"]
    assert all(verdicts.get(k) == "pass" for k in fixed), f"{name}: the next run judges {verdicts}"


@pytest.mark.parametrize("name", NAMES)
def test_second_apply_changes_nothing(remediated, name):
    assert remediated["again"]["digests"][name] == remediated["apply"]["digests"][name], (
        f"{name}: the second apply changed the host:\n"
        + "\n".join(r["output"] for r in remediated["again"]["remediation"].get(name, {}).values()))
    for r in remediated["again"]["remediation"].get(name, {}).values():
        assert r["state"] == "fix failed" or "nothing to do" in r["output"], r


def test_fix_is_the_checks_own_with_its_companion_beside(remediated):
    """One fix text per rule (issue #26): a failed check's fix is its own, first; its companion
    script follows on a line of its own, with this host's values, never in its place."""
    from gpuconform.node.topics import dkms
    fails = {_key(r): r for r in remediated["plan"]["results"] if r["host"] == "dkms-added" and r["verdict"] == "fail"}
    fix = fails["node.dkms.nvidia_installed"]["remediation"]
    own, companion = fix.splitlines()
    assert own == dkms.DKMS_NVIDIA_INSTALLED["fix"], fix
    assert companion == ("companion script: NVIDIA_VERSION=580.95.05 DKMS_MODULE=nvidia KERNEL=6.12.21.red80.x86_64 "
                         "remediation/dkms-install.sh [--apply]  (or pytest -m node --remediate=apply "
                         "--remediate-checks=…)"), fix


def test_report_shows_each_outcome(remediated):
    html = remediated["apply"]["html"]
    assert 'id="gc-remediation"' in html
    for state in ("fixed", "reboot required", "fix failed"):
        assert f"failed → {state}" in html, state


def test_terminal_shows_the_plan_and_the_outcomes(remediated):
    """--remediate=plan prints per host and check what would change; apply prints each outcome and
    their counts, which the report's first screen repeats (issue #25)."""
    plan = remediated["plan"]["stdout"]
    assert "gpuconform: remediation plan (--remediate=plan, nothing changed):" in plan, plan[-3000:]
    assert re.search(r"(?m)^  dkms-added  node\.dkms\.nvidia_installed  dkms-install\.sh:\n      \S", plan), plan[-3000:]
    applied = remediated["apply"]["stdout"]
    counts = re.search(r"gpuconform: remediation \(--remediate=apply\): (.+)", applied)
    assert counts and "fixed" in counts[1] and "reboot required" in counts[1] and "fix failed" in counts[1], applied[-3000:]
    assert re.search(r"(?m)^  dkms-added  node\.dkms\.nvidia_installed: fixed — the re-check passes$", applied)
    first_screen = remediated["apply"]["html"].split('id="gc-remediation-counts">', 1)[1].split("</p>", 1)[0]
    assert counts[1] in first_screen, first_screen
