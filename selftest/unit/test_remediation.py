"""Remediation scripts: plan by default, --apply acts and backs up, a second --apply does nothing."""
import os
import subprocess

import pytest

from runner import REPO


def run(script, root, *args):
    return subprocess.run([str(REPO / "remediation" / script), *args], capture_output=True, text=True,
                          env={**os.environ, "GPUCONFORM_ROOT": str(root)}, timeout=60)


@pytest.fixture
def root(tmp_path):
    (tmp_path / "proc/sys/net/core").mkdir(parents=True)
    (tmp_path / "proc/sys/net/core/bpf_jit_harden").write_text("2\n")
    (tmp_path / "etc/modprobe.d").mkdir(parents=True)
    (tmp_path / "etc/modprobe.d/blacklist-nouveau.conf").write_text("blacklist nouveau\n")
    (tmp_path / "usr/bin").mkdir(parents=True)
    (tmp_path / "usr/bin/ld.bfd").write_text("#!/bin/sh\n")
    (tmp_path / "usr/bin/ld.bfd").chmod(0o755)
    (tmp_path / "usr/bin/ld").write_text("#!/bin/sh\n")  # lost its run bit, as in the article
    (tmp_path / "usr/bin/ld").chmod(0o644)
    return tmp_path


def snapshot(root):
    return {p.relative_to(root): p.read_bytes() if p.is_file() and not p.is_symlink() else os.readlink(p)
            for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.mark.parametrize("script", ["blacklist-nouveau.sh", "sysctl.sh", "fix-ld.sh"])
def test_dry_run_changes_nothing(root, script):
    before = snapshot(root)
    proc = run(script, root)
    assert proc.returncode == 0 and "dry run: nothing changed" in proc.stdout, proc.stdout + proc.stderr
    assert snapshot(root) == before


def test_blacklist_nouveau_apply_is_idempotent_and_backs_up(root):
    first = run("blacklist-nouveau.sh", root, "--apply")
    conf = (root / "etc/modprobe.d/blacklist-nouveau.conf").read_text().splitlines()
    assert conf == ["blacklist nouveau", "blacklist lbm-nouveau", "options nouveau modeset=0",
                    "alias nouveau off", "alias lbm-nouveau off"], first.stdout + first.stderr
    backups = list((root / "etc/modprobe.d").glob("blacklist-nouveau.conf.gpuconform-*.bak"))
    assert [b.read_text() for b in backups] == ["blacklist nouveau\n"]
    again = run("blacklist-nouveau.sh", root, "--apply")
    assert "nothing to do" in again.stdout and len(list((root / "etc/modprobe.d").iterdir())) == 2


def test_sysctl_apply(root):
    run("sysctl.sh", root, "--apply")
    assert (root / "proc/sys/net/core/bpf_jit_harden").read_text().strip() == "1"
    assert "net.core.bpf_jit_harden = 1" in (root / "etc/sysctl.d/99-gpuconform.conf").read_text()
    assert "nothing to do" in run("sysctl.sh", root, "--apply").stdout


def test_fix_ld_apply(root):
    proc = run("fix-ld.sh", root, "--apply")
    assert os.readlink(root / "usr/bin/ld") == "ld.bfd", proc.stdout + proc.stderr
    assert list((root / "usr/bin").glob("ld.gpuconform-*.bak"))
    assert "nothing to do" in run("fix-ld.sh", root, "--apply").stdout


def test_unknown_option_is_one_line(root):
    proc = run("sysctl.sh", root, "--yes")
    assert proc.returncode == 2 and proc.stderr.strip() == "sysctl.sh: unknown option --yes (use --apply or --help)"
