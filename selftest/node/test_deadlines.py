"""Hard deadlines of the node layer, on chroot hosts whose tools hang (``chroot:///root``: the
host's processes are this machine's, so "nothing left running" can be read from /proc).

* a tool that ignores TERM and leaves a ``setsid`` child holding the probe's output, on a host
  with ``timeout`` and on one without: the run ends within ``probe_s`` plus start-up, the host
  is reported as not answering in time, nothing of the probe is left running;
* a tool killed by its command timeout: its check says "timed out after N s";
* SIGINT or SIGTERM while a probe hangs: the run ends within seconds, exit 2, no traceback, the
  report of what finished written, nothing left running;
* ``ssh_connect_s`` bounds the connection to an address that never answers (ssh and paramiko),
  in a network namespace of the test's own.
"""
from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import yaml

from harness import PROFILE
from runner import json_results, run_suite, start_suite
from testbed.hosts import rootfs, scenarios

#: Ignores TERM (so does every child: an ignored signal is inherited) and leaves a child in a
#: session of its own holding stdout, stderr and every other inherited descriptor.
HANGS_AND_ESCAPES = "#!/bin/sh\ntrap '' TERM\nsetsid sleep 3600 &\nexec sleep 3600\n"
#: Ignores TERM: only the KILL that `timeout -k` sends after it ends it.
HANGS_IGNORING_TERM = "#!/bin/sh\ntrap '' TERM\nexec sleep 3600\n"
#: Hangs until TERM.
HANGS = "#!/bin/sh\nexec sleep 3600\n"
START_UP_S = 12  # pytest's start, collection, reports: what a run costs besides the probe


@pytest.fixture(autouse=True)
def _root_only():
    if os.geteuid() != 0:
        pytest.skip("chroot needs root")


def _host(base: Path, name: str, tools: dict[str, str], *, timeout_binary: bool = True) -> Path:
    """The good H100 host with ``tools`` (path → script) replaced, optionally without `timeout`."""
    root = rootfs.render(scenarios.build("gpu-good"), base / name / "root")
    (root / "usr/bin/setsid").symlink_to("busybox")
    for path, script in tools.items():
        target = root / path.lstrip("/")
        target.unlink()
        target.write_text(script)
        target.chmod(0o755)
    if not timeout_binary:
        (root / "usr/bin/timeout").unlink()
    return root


def _processes_in(base: Path) -> list[str]:
    """Processes of this machine whose root directory lies under ``base`` (the hosts' processes)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            root = os.readlink(f"/proc/{pid}/root")
            if root.startswith(str(base)):
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                found.append(f"{pid} {cmdline[:80]}")
        except OSError:
            continue
    return found


@pytest.fixture
def base(tmp_path):
    """A folder for the hosts; whatever still runs in them at the end is killed (and failed on)."""
    yield tmp_path
    for line in _processes_in(tmp_path):
        try:
            os.kill(int(line.split()[0]), signal.SIGKILL)
        except OSError:
            pass


def _profile(base: Path, **timeouts: float) -> Path:
    doc = yaml.safe_load(PROFILE.read_text())
    doc["timeouts"] = {**doc.get("timeouts", {}), **timeouts}
    path = base / "profile.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _results(doc: dict, host: Path) -> dict[str, dict]:
    return {r["check_id"] + (f"[{r['param']}]" if r.get("param") else ""): r
            for r in doc["results"] if r.get("host") == str(host)}


def test_probe_deadline_ends_hung_tools(base):
    """nvidia-smi hangs, ignores TERM and leaves a setsid child holding stdout; one host has
    `timeout`, one has not: both are reported within probe_s, and nothing of them runs after."""
    probe_s = 6
    with_timeout = _host(base, "with-timeout", {"/usr/bin/nvidia-smi": HANGS_AND_ESCAPES})
    without_timeout = _host(base, "without-timeout", {"/usr/bin/nvidia-smi": HANGS_AND_ESCAPES},
                            timeout_binary=False)
    t0 = time.monotonic()
    proc, doc = run_suite("-m", "node", "-q", f"--profile={_profile(base, probe_s=probe_s, command_s=2)}",
                          f"--hosts=chroot://{with_timeout},chroot://{without_timeout}",
                          report_dir=base / "reports", timeout=120)
    elapsed = time.monotonic() - t0
    assert elapsed < probe_s + START_UP_S, f"the run took {elapsed:.0f} s with probe_s {probe_s}"
    assert proc.returncode == 1 and doc, proc.stdout[-3000:] + proc.stderr[-2000:]
    for host in (with_timeout, without_timeout):
        results = _results(doc, host)
        reachable = results["node.reachable"]
        assert reachable["verdict"] == "fail", reachable
        assert f"did not finish within {probe_s} s (profile timeouts.probe_s)" in reachable["message"], reachable
        others = {k: r["verdict"] for k, r in results.items() if k != "node.reachable"}
        assert others and set(others.values()) == {"blocked"}, others
    assert not _processes_in(base), "left running on the hosts:\n" + "\n".join(_processes_in(base))


def test_command_timeout_is_named(base):
    """A tool killed by its command timeout (command_s) says so, whether TERM ended it (dkms) or
    the KILL after it (nvidia-smi ignores TERM)."""
    host = _host(base, "slow-tools", {"/usr/bin/nvidia-smi": HANGS_IGNORING_TERM, "/usr/sbin/dkms": HANGS})
    proc, doc = run_suite("-m", "node", "-q", f"--profile={_profile(base, probe_s=60, command_s=1)}",
                          f"--hosts=chroot://{host}", report_dir=base / "reports", timeout=120)
    assert doc, proc.stdout[-3000:] + proc.stderr[-2000:]
    results = _results(doc, host)
    smi, dkms = results["node.smi.runs"], results["node.dkms.nvidia_installed"]
    assert smi["verdict"] == "fail" and smi["message"] == "nvidia-smi timed out after 1 s (timeouts.command_s)", smi
    assert dkms["verdict"] == "error", dkms
    assert "`dkms status` timed out after 1 s (timeouts.command_s)" in dkms["message"], dkms
    assert "[timed out after 1 s]" in smi["evidence"], smi["evidence"]
    assert not _processes_in(base), "left running on the host:\n" + "\n".join(_processes_in(base))


def _wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s waiting for {what}"
        time.sleep(0.2)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_signal_ends_the_run(base, sig):
    """SIGINT or SIGTERM while the probe hangs (no `timeout` on the host, probe_s 120): exit 2
    within seconds, no traceback, the report written as interrupted, nothing left on the host."""
    host = _host(base, "hung", {"/usr/bin/nvidia-smi": HANGS_AND_ESCAPES}, timeout_binary=False)
    proc = start_suite("-m", "node", "-q", f"--profile={_profile(base, probe_s=120)}", f"--hosts=chroot://{host}",
                       report_dir=base / "reports")
    try:
        _wait_for(lambda: any("sleep 3600" in p for p in _processes_in(base)), 60, "the hung nvidia-smi")
        os.kill(proc.pid, sig)
        t0 = time.monotonic()
        out, _ = proc.communicate(timeout=30)
        elapsed = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert elapsed < 5, f"the run took {elapsed:.1f} s to end after {sig.name}"
    assert proc.returncode == 2, out[-3000:]
    assert "Traceback" not in out and "INTERNALERROR" not in out, out[-3000:]
    doc = json_results(base / "reports")
    assert doc and "the run was interrupted" in " ".join(doc["verdict"]["reasons"]), out[-3000:]
    assert doc["verdict"]["word"] == "REJECTED"
    assert not _processes_in(base), "left running on the host:\n" + "\n".join(_processes_in(base))


def test_ctrl_c_during_collection_ends_the_run_as_interrupted(base):
    """Ctrl-C while pytest still collects (the probes already run): exit 2 and the report written
    as interrupted, never exit 4 for the prerequisites of the modules it did not reach."""
    host = _host(base, "hung", {"/usr/bin/nvidia-smi": HANGS_AND_ESCAPES}, timeout_binary=False)
    proc = start_suite("-p", "selftest.node.interrupt_collection", "-m", "node", "-q",
                       f"--profile={_profile(base, probe_s=120)}", f"--hosts=chroot://{host}",
                       report_dir=base / "reports")
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 2, out[-3000:]
    assert "unknown prerequisite" not in out and "Traceback" not in out, out[-3000:]
    doc = json_results(base / "reports")
    assert doc and "the run was interrupted" in " ".join(doc["verdict"]["reasons"]), out[-3000:]
    assert not _processes_in(base), "left running on the host:\n" + "\n".join(_processes_in(base))


#: A network namespace of our own where 10.213.99.0/24 lies behind one end of a veth pair whose
#: other end has no address and a MAC no neighbour entry names: packets there vanish, so a
#: connection to it is never answered (nor refused).
BLACKHOLE = ("unshare", "--net", "sh", "-c",
             "ip link set lo up && ip link add gpuc-void type veth peer name gpuc-sink && "
             "ip addr add 10.213.99.1/24 dev gpuc-void && ip link set gpuc-sink up && ip link set gpuc-void up && "
             "for a in 2 3; do ip neigh replace 10.213.99.$a lladdr 02:00:00:00:00:0$a nud permanent dev gpuc-void; "
             "done && exec \"$@\"", "blackhole")


def test_ssh_connect_timeout(base):
    """ssh:// and paramiko:// hosts that never answer the connection: node.reachable fails after
    the profile's ssh_connect_s (1 s), not testinfra's own 10 s."""
    t0 = time.monotonic()
    proc, doc = run_suite("-m", "node", "-q", "-k", "reachable",
                          f"--profile={_profile(base, ssh_connect_s=1, probe_s=60)}",
                          "--hosts=ssh://root@10.213.99.2,paramiko://root@10.213.99.3",
                          report_dir=base / "reports", timeout=120, wrapper=BLACKHOLE)
    elapsed = time.monotonic() - t0
    assert doc, proc.stdout[-3000:] + proc.stderr[-2000:]
    messages = {r["host"]: r["message"] for r in doc["results"] if r["check_id"] == "node.reachable"}
    assert "Connection timed out" in messages["10.213.99.2"], messages
    assert "timed out" in messages["10.213.99.3"], messages
    assert elapsed < 9, f"the run took {elapsed:.1f} s with ssh_connect_s 1 (testinfra's own default is 10 s)"
