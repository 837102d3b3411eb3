"""Stopping the test bed, or killing what started it, leaves no process behind."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from testbed.cluster.controlplane import REPO, ControlPlane
from testbed.cluster.procs import Supervisor
from testbed.waiting import wait_for

EXPECTED = {"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok", "devicesim", "nodeagent", "hostexec"}


def test_stop_leaves_no_process(tmp_path):
    cp = ControlPlane(tmp_path / "state", attached=True).start()
    started = Supervisor(cp.state_dir).alive()
    assert {r.name for r in started} == EXPECTED
    cp.stop()
    assert [r for r in started if r.alive()] == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_interrupted_parent_takes_its_processes_along(tmp_path, sig):
    """Ctrl-C, a TERM from CI, or SIGKILL (no cleanup code runs at all) of the process that
    started the bed must not leave orphans."""
    state = tmp_path / "state"
    script = textwrap.dedent(f"""
        import sys, time
        from testbed.cluster.controlplane import ControlPlane
        ControlPlane({str(state)!r}, attached=True).start()
        print("started", flush=True)
        sys.stdin.read()
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        assert parent.stdout.readline().strip() == "started"
        started = Supervisor(state).alive()
        assert {r.name for r in started} == EXPECTED
        parent.send_signal(sig)
        parent.wait(timeout=60)
        wait_for("the test bed processes to die with their parent",
                 lambda: not [r for r in started if r.alive()], 30)
    finally:
        parent.kill()
        Supervisor(state).stop_all()
