"""Gathering node facts: one probe per host, many hosts at once, each under one hard deadline.

The deadline (profile ``timeouts.probe_s``) always ends the wait: a probe still running then is
reported as timed out and ended on both sides. On the host, the probe's own watchdog ends every
process it started (:mod:`gpuconform.node.probe`). Here, every local process of that probe (the
``ssh`` client, ``chroot``, or the probe itself on ``local://`` and ``chroot://`` hosts, which
run on this machine) is found by the probe's token and killed, and a paramiko channel is closed.
Probes run in daemon threads: a stuck one can never keep the run from ending.
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import os
import queue
import secrets
import signal
import threading
import time
from typing import Any, Callable, Iterable

from gpuconform.node import probe
from gpuconform.node.facts import NodeFacts
from gpuconform.node.pool import label


#: The host's watchdog fires this much after our deadline: normally ours ends the wait (and says
#: so); the host's ends the probe there also when the connection is gone.
HOST_GRACE_S = 2


def host_deadline_s(probe_s: float) -> float:
    """The probe's deadline on the host (its watchdog): the profile's ``timeouts.probe_s`` and the
    grace after it. Every host kind (SSH, local, chroot, a k8s-node pod) is held to this one."""
    return probe_s + HOST_GRACE_S


class NotStarted(NodeFacts):
    """This machine could not start the probe's local process (fork/exec of ``ssh`` or the shell
    failed, twice): the host was never asked, so it is "could not check", not "unreachable"."""
    could_not_check = True


def _started_here(exc: BaseException) -> bool:
    """An error of starting a local process: an OSError naming the program (``[Errno 14] Bad
    address: '/bin/sh'``, ``No such file or directory: 'ssh'``). A socket's error names none."""
    return isinstance(exc, OSError) and exc.filename is not None


@dataclasses.dataclass(frozen=True)
class Ran:
    """What a command printed on a host, decoded here: UTF-8, an undecodable byte replaced (a
    host file in Latin-1 is data, not a failure of the host)."""
    rc: int | None
    stdout: str
    stderr: str


def _text(result: Any, stream: str) -> str:
    raw = getattr(result, f"{stream}_bytes", None)  # testinfra's CommandResult: the bytes it read
    if raw is None:  # a backend that read text
        return getattr(result, stream, None) or ""
    return raw.decode("utf-8", "replace")


def run_on_host(host: Any, command: str) -> Ran:
    """``host.run(command)`` with its output decoded here, never by testinfra: testinfra would
    guess the encoding of non-ASCII output by running ``python3 -c 'import locale…'`` on the
    host (or this machine), outside any deadline, a process that may hang or outlive the run."""
    backend = getattr(host, "backend", None)
    if backend is not None and hasattr(backend, "_encoding"):
        backend._encoding = "utf-8"  # what it would have asked python3 for; also encodes the command
    result = host.run(command)
    return Ran(result.rc, _text(result, "stdout"), _text(result, "stderr"))


def _run(host: Any, script: str) -> Ran:
    """``run_on_host(host, script)``, once more when the local process could not be started."""
    try:
        return run_on_host(host, script)
    except OSError as exc:
        if not _started_here(exc):
            raise
    return run_on_host(host, script)


def probe_host(host: Any, label: str, script: str) -> NodeFacts:
    """Run the probe on a testinfra host; transport failures become a facts error."""
    try:
        result = _run(host, script)
    except RuntimeError as exc:  # testinfra raises with the ssh result on exit 255
        res = exc.args[0] if exc.args else exc
        err = _text(res, "stderr") or str(res)
        return NodeFacts(label, {}, f"cannot reach the host: {err.strip().splitlines()[-1] if err.strip() else err}")
    except Exception as exc:  # paramiko/kubectl/chroot backends raise their own errors
        if _started_here(exc):
            return NotStarted(label, {}, f"this machine could not start the probe (tried twice): {exc}")
        return NodeFacts(label, {}, f"cannot run the probe on the host: {type(exc).__name__}: {exc}")
    return facts_from_output(label, result.stdout, result.stderr, result.rc)


def facts_from_output(label: str, stdout: str, stderr: str, rc: int | None) -> NodeFacts:
    """The facts of what the probe printed (over SSH, or a k8s-node:// probe pod's log): an
    error where it printed nothing usable or was cut short."""
    sections = probe.parse(stdout)
    if not sections:
        tail = (stderr or stdout or "").strip().splitlines()[-1:] or [f"exit {rc}"]
        return NodeFacts(label, {}, f"the probe printed nothing usable: {tail[0]}")
    if not probe.finished(stdout):
        last = list(sections)[-1]
        return NodeFacts(label, {}, f"the probe was cut short in step '{last}' (exit {rc}): ended by "
                                    f"its deadline on the host, or the connection dropped")
    return NodeFacts(label, sections)


def kill_local_processes(token: str, rounds: int = 5) -> int:
    """KILL every process of this machine whose command line or environment holds ``token``
    (repeated, so that a child forked meanwhile goes too); returns how many were killed."""
    needle, killed = token.encode(), 0
    for _ in range(rounds):
        found = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                    text = f.read()
                with open(f"/proc/{entry.name}/environ", "rb") as f:
                    text += f.read()
                if needle in text:
                    os.kill(int(entry.name), signal.SIGKILL)
                    found += 1
            except OSError:  # gone meanwhile, or not ours to read
                continue
        killed += found
        if not found:
            break
        time.sleep(0.05)
    return killed


def _settle(future: cf.Future, facts: NodeFacts) -> None:
    """The first result set wins: the probe's own, or the deadline's."""
    try:
        future.set_result(facts)
    except cf.InvalidStateError:
        pass


@dataclasses.dataclass
class _Probe:
    token: str
    future: cf.Future
    started: float | None = None  # when it got one of the pool's slots: its deadline counts from there
    host: Any = None


class FactsPool:
    """The probe pool of hosts this machine reaches itself (SSH, paramiko, local, chroot): probes
    every host once, concurrently, in the order the hosts were submitted (the order their checks
    run in: each host's checks start as soon as its probe lands), and hands out the facts by host."""

    def __init__(self, script_for: Callable[..., str], timeout_s: float, workers: int = 8):
        """``script_for(token, deadline_s, host)``: the probe script carrying ``token``; at most
        ``workers`` probes run at once, each held to ``timeout_s`` from when it got its slot."""
        self._script_for = script_for
        self.deadline_s = timeout_s
        self._workers = workers
        self._threads = 0
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()  # first in, first probed
        self._probes: dict[str, _Probe] = {}
        self._lock = threading.Lock()

    # -- the pool's contract (gpuconform/node/pool.py) ------------------------------------------------
    def submit(self, hosts: Iterable[Any]) -> None:
        for host in hosts:
            self._start(host, again=False)

    def get(self, host: Any) -> NodeFacts:
        return self._wait(label(host), self._start(host, again=False))

    def reprobe(self, host: Any) -> NodeFacts:
        """Probe the host once more (after ``--remediate=apply``), in the queue and under the
        deadline of every probe."""
        return self._wait(label(host), self._start(host, again=True))

    def close(self) -> list[str]:
        """End every probe still running (the run ends, or was interrupted); waits for none."""
        for run in list(self._probes.values()):
            if not run.future.done():
                self._end(run)
        return []

    # -- probes ---------------------------------------------------------------------------------
    def _start(self, host: Any, again: bool) -> _Probe:
        name = label(host)
        with self._lock:
            if name in self._probes and not again:
                return self._probes[name]
            run = self._probes[name] = _Probe(secrets.token_hex(12), cf.Future(), host=host)
            self._queue.put(lambda: self._probe(run, name))
            if self._threads < self._workers:
                self._threads += 1
                threading.Thread(target=self._work, name=f"probe worker {self._threads}", daemon=True).start()
        return run

    def _work(self) -> None:
        while True:
            self._queue.get()()

    def _probe(self, run: _Probe, name: str) -> None:
        run.started = time.monotonic()
        try:
            facts = probe_host(run.host, name, self._script_for(run.token, host_deadline_s(self.deadline_s), name))
        except BaseException as exc:  # noqa: BLE001 - a probe must always settle its future
            facts = NodeFacts(name, {}, f"cannot run the probe on the host: {type(exc).__name__}: {exc}")
        _settle(run.future, facts)

    def _wait(self, name: str, run: _Probe) -> NodeFacts:
        while True:
            started = run.started
            left = self.deadline_s if started is None else started + self.deadline_s - time.monotonic()
            try:
                return run.future.result(timeout=max(0.0, left))
            except cf.TimeoutError:
                if started is not None:
                    break  # else it waited for a slot all along: its own deadline has not begun
        # settled first: what the ended probe printed until now is not its result
        _settle(run.future, NodeFacts(name, {}, f"the probe did not finish within {self.deadline_s:g} s "
                                                f"(profile timeouts.probe_s); it was ended on the host"))
        self._end(run)
        return run.future.result()

    @staticmethod
    def _end(run: _Probe) -> None:
        """End what is left of a probe: its local processes, its paramiko channel."""
        kill_local_processes(run.token)
        client = getattr(getattr(run.host, "backend", None), "__dict__", {}).get("client")
        if client is not None:  # testinfra's paramiko backend: closing ends the channel's read
            client.close()
