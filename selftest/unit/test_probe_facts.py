"""The probe runs in any POSIX sh, and its real output from an H200 host reads back as facts."""
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuconform.node import probe
from gpuconform.node.facts import CannotTell, NodeFacts
from gpuconform.parsers import nvidia_smi

H200 = (Path(__file__).parent / "fixtures" / "h200-probe.txt").read_text()


@pytest.fixture(scope="module")
def h200():
    return NodeFacts("h200", probe.parse(H200))


def test_every_section_comes_back_with_its_exit_code():
    out = subprocess.run(probe.build_script(probe.ProbeInputs(sysctls=("net.core.somaxconn",)), 5), shell=True,
                         capture_output=True, text=True, timeout=60).stdout
    sections = probe.parse(out)
    assert sorted(sections) == sorted(step.name for step in probe.STEPS)
    assert all(s.rc is not None for s in sections.values())
    assert sections["sysctl"].out.startswith("net.core.somaxconn=")


def test_the_probe_looks_at_the_runtime_binaries_it_is_given(tmp_path):
    """The runtime binary is looked at where the profile says (the GPU Operator's toolkit puts it
    under /usr/local/nvidia/toolkit), not at a path written into the probe."""
    toolkit = tmp_path / "usr/local/nvidia/toolkit"
    toolkit.mkdir(parents=True)
    (toolkit / "nvidia-container-runtime").write_text("#!/bin/sh\n")
    (toolkit / "nvidia-container-runtime").chmod(0o755)
    (toolkit / "nvidia-ctk").write_text("not executable\n")
    inputs = probe.ProbeInputs(runtime_binaries=(f"{toolkit}/nvidia-container-runtime", f"{toolkit}/nvidia-ctk",
                                                 f"{tmp_path}/usr/bin/nvidia-container-runtime"))
    out = subprocess.run(probe.build_script(inputs, 5), shell=True, capture_output=True, text=True, timeout=60).stdout
    facts = NodeFacts("local", probe.parse(out))
    found = facts.runtime_binary(f"{toolkit}/nvidia-container-runtime")
    assert (found.exists, found.executable) == (True, True)
    assert facts.runtime_binary(f"{toolkit}/nvidia-ctk").executable is False
    assert facts.runtime_binary(f"{tmp_path}/usr/bin/nvidia-container-runtime").exists is False
    with pytest.raises(CannotTell, match="did not look at /usr/bin/nvidia-container-runtime"):
        facts.runtime_binary("/usr/bin/nvidia-container-runtime")
    assert f"$ {probe.BY_NAME['runtime_binary'].shown}   [exit 0]" in facts.evidence("runtime_binary")


def test_every_step_is_shown_as_a_command():
    assert len(probe.BY_NAME) == len(probe.STEPS) and all(step.shown.strip() for step in probe.STEPS)


def test_stderr_is_kept_apart_from_stdout():
    text = probe.parse("@@gpuconform x begin\n| out line\n@@e err line\n@@gpuconform x rc=3\n")
    assert text["x"] == probe.Section(3, "out line", "err line")


def test_a_probe_cut_short_keeps_what_it_read():
    sections = probe.parse("@@gpuconform a begin\n| A\n@@gpuconform a rc=0\n@@gpuconform b begin\n| partial\n")
    assert sections["a"].ok and sections["b"].rc is None and sections["b"].out == "partial"


def test_a_command_killed_by_its_timeout_says_so():
    sections = probe.parse("@@gpuconform smi_gpus begin\n@@gpuconform smi_gpus rc=124 timeout=30\n"
                           "@@gpuconform dkms_status begin\n@@e dkms: broken\n@@gpuconform dkms_status rc=3\n")
    assert sections["smi_gpus"].failure == "timed out after 30 s (timeouts.command_s)"
    assert sections["dkms_status"].timed_out_s is None and sections["dkms_status"].failure == "dkms: broken"


def _with_token(token: str) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if f"GPUC_RUN={token}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                pids.append(int(pid))
        except OSError:
            continue
    return pids


def test_watchdog_ends_the_probe_on_the_host(tmp_path):
    """The probe's own watchdog (what ends it on an SSH host, where the client can only hang up):
    nvidia-smi ignores TERM and leaves a setsid child holding the output, its command timeout is
    far off; at the probe's deadline every process of the probe is gone and its output closed."""
    (tmp_path / "nvidia-smi").write_text("#!/bin/sh\ntrap '' TERM\nsetsid sleep 3600 &\nexec sleep 3600\n")
    (tmp_path / "nvidia-smi").chmod(0o755)
    token = "watchdog-selftest-" + os.urandom(4).hex()
    t0 = time.monotonic()
    try:
        proc = subprocess.run(probe.build_script(probe.ProbeInputs(), 60, deadline_s=3, token=token), shell=True,
                              capture_output=True, text=True, timeout=30,
                              env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"})
    finally:
        deadline = time.monotonic() + 3  # the watchdog's last scan (its own tr and grep) may be running
        while (left := _with_token(token)) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in left:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
    assert time.monotonic() - t0 < 6 and proc.returncode == 128 + signal.SIGKILL, proc.returncode  # sh: KILLed
    assert not left, f"left running: {left}"
    assert probe.parse(proc.stdout)["smi_gpus"].rc is None  # cut short there


ORPHANS = r"""
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans come to us
from gpuconform.node import probe
subprocess.run(probe.build_script(command_timeout_s=5, deadline_s=60, token="orphans"), shell=True,
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
time.sleep(0.5)
left = []
while True:
    try:
        pid, _ = os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        break
    if pid == 0:
        left.append("still running")
        break
    left.append(pid)
print(len(left))
"""


def test_probe_leaves_no_orphan_or_zombie():
    """A probe that ends in time leaves nothing on the host: its watchdog (and the watchdog's
    sleep) is stopped and reaped, not handed to an init that may never reap it (the H200's does
    not: a zombie sh and sleep stayed after every run)."""
    out = subprocess.run([sys.executable, "-c", ORPHANS], capture_output=True, text=True, timeout=90,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    assert out.stdout.strip() == "0", out.stdout + out.stderr


def test_real_h200_identity(h200):
    assert h200.kernel_release == "6.18.44-fc-v657-gpu" and h200.os_family == "debian"
    assert {"nvidia", "nvidia_uvm"} <= set(h200.modules)
    assert (h200.driver_proc_version.version, h200.driver_proc_version.flavour) == ("580.159.04", "open")
    assert [(g.name, g.pci_device_id, g.persistence_mode, g.mig_mode_pending) for g in h200.gpus] == [
        ("NVIDIA H200", "0x233510DE", "Enabled", "Disabled")]
    assert h200.char_devices == {"nvidia0", "nvidiactl", "nvidia-uvm"}


def test_real_h200_security_facts(h200):
    assert h200.sig_enforce is True and h200.lockdown == "none"
    assert (h200.headers.state, h200.headers.path) == ("absent", "/lib/modules/6.18.44-fc-v657-gpu/build")
    assert h200.ld.runs and h200.ld.real.endswith("ld.bfd")


def test_real_h200_missing_tools_are_told_not_guessed(h200):
    assert h200.tool("dkms") is None and h200.tool("nvidia-smi") == "/usr/local/nvidia/bin/nvidia-smi"
    with pytest.raises(CannotTell, match="`dkms` is not installed"):
        h200.dkms_entries
    with pytest.raises(CannotTell, match="systemd is not the init system"):
        h200.units
    with pytest.raises(CannotTell, match="neither lsinitrd nor lsinitramfs"):
        h200.initramfs_nouveau
    assert "nvidia-persistenced" not in h200.processes
    assert h200.gpu_health == [nvidia_smi.GpuHealth(index=0, retired_pages_pending=None,
                                                    remapped_rows_pending="No", remapped_rows_failure="No")]


def test_evidence_names_the_command_and_exit(h200):
    ev = h200.evidence("proc_modules", "dkms_status")
    assert ev.startswith("$ cat /proc/modules   [exit 0]\nnvidia_uvm")
    assert "$ dkms status   [exit 127]" in ev


def test_unreachable_host_cannot_tell_anything():
    facts = NodeFacts("gpu-9", {}, "cannot reach the host: ssh: connect to host gpu-9 port 22: No route to host")
    with pytest.raises(CannotTell, match="No route to host"):
        facts.modules


def test_real_h200_persistence_is_legacy_mode(h200):
    assert h200.persistence_without_daemon is True
