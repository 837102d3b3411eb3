"""Remediation scripts run on this machine against rendered host roots (``GPUCONFORM_ROOT``), RHEL
family and Debian/Ubuntu: the dry run changes nothing (byte for byte), ``--apply`` fixes the host
(the node suite's chroot run passes the check after), a second ``--apply`` says "nothing to do"
and changes nothing (no new backup). Meanwhile the machine itself is watched: a PATH of shims
records any call of a tool that changes a host, and /etc and /boot are hashed before and after.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from runner import REPO, run_suite
from testbed.hosts import rootfs, scenarios

DRIVER = scenarios.DRIVER
#: scenario → (script, its environment, the check that must pass after --apply and the reboot
#: the script must ask for, or None)
CASES = {
    "bpf-jit-harden-2": ("sysctl.sh", {}, "node.sysctl[net.core.bpf_jit_harden]", None),
    "nouveau-not-blacklisted": ("blacklist-nouveau.sh", {}, "node.nouveau.blacklisted", None),
    "nouveau-in-initramfs": ("blacklist-nouveau.sh", {}, "node.nouveau.not_in_initramfs", None),
    "cmdline-missing-sig-enforce": ("kernel-cmdline.sh", {}, None, "module.sig_enforce=0"),
    "cmdline-has-lockdown": ("kernel-cmdline.sh", {}, None, "lockdown"),
    "dkms-added": ("dkms-install.sh", {"NVIDIA_VERSION": DRIVER}, "node.dkms.nvidia_installed", None),
    "ld-not-executable": ("fix-ld.sh", {}, "node.toolchain.ld_runs", None),
    "persistenced-inactive": ("persistenced.sh", {}, "node.persistenced.running", None),
    "no-systemd-persistence-off": ("persistenced.sh", {}, "node.gpu.persistence_mode", None),
    "containerd-no-nvidia-runtime": ("containerd-nvidia-runtime.sh", {}, "node.containerd.nvidia_runtime", None),
    "mig-pending": ("mig-reset.sh", {}, None, "GPU 3"),
    "no-kernel-headers": ("kernel-headers.sh", {}, "node.kernel.headers", None),
    "fabricmanager-mismatch": ("fabricmanager.sh", {"NVIDIA_VERSION": DRIVER}, "node.fabricmanager.version", None),
}
FAMILIES = {"rhel": "gpu-good", "debian": "good-debian"}
#: tools that change a host: none of them may run on this machine
WATCHED = ("grubby", "grub2-mkconfig", "update-grub", "grub-mkconfig", "dracut", "update-initramfs",
           "systemctl", "nvidia-ctk", "nvidia-smi", "dkms", "sysctl", "modprobe", "rmmod", "containerd",
           "dnf", "yum", "apt-get", "apt", "rpm", "dpkg")
MACHINE_TREES = ("/etc", "/boot")


def _run(script: str, root: Path, env: dict, shims: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "remediation" / script), *args], capture_output=True, text=True,
                          timeout=60, env={**os.environ, **env, "GPUCONFORM_ROOT": str(root),
                                           "PATH": f"{shims}:{os.environ['PATH']}"})


@pytest.fixture(scope="module")
def watched(tmp_path_factory):
    """(shim folder, call log, digests of the machine's /etc and /boot taken now)."""
    if os.geteuid() != 0:
        pytest.skip("rendering host roots and chroot need root")
    shims = tmp_path_factory.mktemp("shims")
    log = shims / "calls.log"
    for tool in WATCHED:
        (shims / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\nexit 97\n')
        (shims / tool).chmod(0o755)
    return shims, log, {t: rootfs.digest(t) for t in MACHINE_TREES}


@pytest.fixture(scope="module")
def runs(watched, tmp_path_factory):
    """Every case on both families: roots rendered, then plan, apply, apply again; digests between."""
    shims, _, _ = watched
    base = tmp_path_factory.mktemp("roots")
    out = {}
    for family, good in FAMILIES.items():
        for name, (script, env, _, _) in CASES.items():
            root = rootfs.render(scenarios.build(name, on=good), base / family / name / "root",
                                 stage=base / ".bin")
            before = rootfs.digest(root)
            plan = _run(script, root, env, shims)
            after_plan = rootfs.digest(root)
            apply = _run(script, root, env, shims, "--apply")
            after_apply = rootfs.digest(root)
            again = _run(script, root, env, shims, "--apply")
            out[family, name] = dict(root=root, before=before, plan=plan, after_plan=after_plan,
                                     apply=apply, after_apply=after_apply, again=again,
                                     after_again=rootfs.digest(root))
    return out


@pytest.fixture(scope="module")
def rechecked(runs, tmp_path_factory):
    """The node suite over every fixed root (chroot backend): results by (family, scenario)."""
    hosts = ",".join(f"chroot://{r['root']}" for r in runs.values())
    _, doc = run_suite("-m", "node", "-q", f"--hosts={hosts}", report_dir=tmp_path_factory.mktemp("recheck"))
    assert doc, "the node suite wrote no report"
    by_root: dict = {}
    for r in doc["results"]:
        key = r["check_id"] + (f"[{r['param']}]" if r["param"] else "")
        by_root.setdefault(r["host"], {})[key] = r["verdict"]
    return {k: by_root.get(str(v["root"]), {}) for k, v in runs.items()}


CASE_IDS = [(f, n) for f in FAMILIES for n in CASES]


@pytest.mark.parametrize("family,name", CASE_IDS, ids=[f"{f}-{n}" for f, n in CASE_IDS])
def test_plan_changes_nothing(runs, family, name):
    r = runs[family, name]
    assert r["plan"].returncode == 0, r["plan"].stdout + r["plan"].stderr
    assert "would: " in r["plan"].stdout or "reboot required" in r["plan"].stdout, r["plan"].stdout
    assert r["after_plan"] == r["before"], f"the dry run changed the root:\n{r['plan'].stdout}"


@pytest.mark.parametrize("family,name", CASE_IDS, ids=[f"{f}-{n}" for f, n in CASE_IDS])
def test_apply_fixes_then_second_apply_does_nothing(runs, rechecked, family, name):
    r = runs[family, name]
    script, _, check, reboot = CASES[name]
    assert r["apply"].returncode == 0, r["apply"].stdout + r["apply"].stderr
    if check:
        assert rechecked[family, name].get(check) == "pass", (
            f"{check} after --apply: {rechecked[family, name].get(check)}\n{r['apply'].stdout}")
    if reboot:
        assert "reboot required" in r["apply"].stdout and reboot in r["apply"].stdout, r["apply"].stdout
    assert r["again"].returncode == 0 and "nothing to do" in r["again"].stdout, r["again"].stdout
    assert r["after_again"] == r["after_apply"], f"the second --apply changed the root:\n{r['again'].stdout}"


@pytest.mark.parametrize("family", FAMILIES)
def test_edits_are_backed_up_before_the_first_change(runs, family):
    """Each edited file's backup holds the file as it was before the script's first edit."""
    r = runs[family, "nouveau-not-blacklisted"]
    r2 = runs[family, "ld-not-executable"]
    assert not list((r["root"] / "etc/modprobe.d").glob("blacklist-nouveau.conf.gpuconform-*.bak")), \
        "a file the script created has no previous state to back up"
    ld_backups = list((r2["root"] / "usr/bin").glob("ld.gpuconform-*.bak"))
    assert len(ld_backups) == 1 and not os.access(ld_backups[0], os.X_OK), ld_backups
    grub = runs[family, "cmdline-has-lockdown"]["root"]
    edited = next((grub / "boot/loader/entries").glob("*.conf")) if family == "rhel" else grub / "etc/default/grub"
    backups = list(edited.parent.glob(f"{edited.name}.gpuconform-*.bak"))
    assert len(backups) == 1 and "lockdown=integrity" in backups[0].read_text(), backups
    assert "lockdown" not in edited.read_text()


def test_the_machine_running_the_scripts_is_untouched(runs, watched):
    shims, log, before = watched
    assert not log.exists(), f"a script ran a host tool on this machine:\n{log.read_text()}"
    changed = [t for t in MACHINE_TREES if rootfs.digest(t) != before[t]]
    assert not changed, f"the machine's {', '.join(changed)} changed while the scripts ran"


def test_unknown_option_is_one_line(tmp_path):
    proc = subprocess.run([str(REPO / "remediation" / "sysctl.sh"), "--yes"], capture_output=True, text=True,
                          env={**os.environ, "GPUCONFORM_ROOT": str(tmp_path)}, timeout=30)
    assert proc.returncode == 2 and proc.stderr.strip() == "sysctl.sh: unknown option --yes (use --apply or --help)"


def test_fixture_over_chroot_fixes_only_the_named_checks(watched, tmp_path):
    """``--remediate=apply --remediate-checks=node.sysctl`` through testinfra's chroot backend: the
    sysctl host is fixed, the host whose failure was not named is left byte for byte as it was."""
    roots = {n: rootfs.render(scenarios.build(n), tmp_path / n / "root", stage=tmp_path / ".bin")
             for n in ("bpf-jit-harden-2", "dkms-added")}
    untouched = rootfs.digest(roots["dkms-added"])
    _, doc = run_suite("-m", "node", "-q", "--hosts=" + ",".join(f"chroot://{r}" for r in roots.values()),
                       "--remediate=apply", "--remediate-checks=node.sysctl", report_dir=tmp_path / "reports")
    assert [(r["host"], r["check_id"], r["state"]) for r in doc["remediation"]] == [
        (str(roots["bpf-jit-harden-2"]), "node.sysctl", "fixed")], doc["remediation"]
    assert rootfs.digest(roots["dkms-added"]) == untouched


def test_no_remediation_without_the_option(watched, tmp_path):
    """The checks alone change nothing on a failing host and run no script."""
    root = rootfs.render(scenarios.build("bpf-jit-harden-2"), tmp_path / "h" / "root", stage=tmp_path / ".bin")
    before = rootfs.digest(root)
    _, doc = run_suite("-m", "node", "-q", f"--hosts=chroot://{root}", report_dir=tmp_path / "reports")
    assert [r["check_id"] for r in doc["results"] if r["verdict"] == "fail"] == ["node.sysctl"]
    assert doc["remediation"] == [] and rootfs.digest(root) == before
