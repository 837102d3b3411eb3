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
from typing import Any, Callable

from gpuconform.node import probe
from gpuconform.node.facts import NodeFacts


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
    if raw is None:  # an answer already in text (a k8s-node:// pod's log)
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
    sections = probe.parse(result.stdout)
    if not sections:
        tail = (result.stderr or result.stdout or "").strip().splitlines()[-1:] or [f"exit {result.rc}"]
        return NodeFacts(label, {}, f"the probe printed nothing usable: {tail[0]}")
    if not probe.finished(result.stdout):
        last = list(sections)[-1]
        return NodeFacts(label, {}, f"the probe was cut short in step '{last}' (exit {result.rc}): ended by "
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
    """Probes every host once, concurrently, in the order the hosts were submitted (the order their
    checks run in: each host's checks start as soon as its probe lands), and hands out the facts
    by label."""

    def __init__(self, script_for: Callable[..., str], timeout_s: float, workers: int = 8):
        """``script_for(token, deadline_s)``: the probe script carrying ``token``; at most
        ``workers`` probes run at once."""
        self._script_for = script_for
        self._timeout = timeout_s
        self._workers = workers
        self._threads = 0
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()  # first in, first probed
        self._probes: dict[str, _Probe] = {}
        self._lock = threading.Lock()

    @property
    def script(self) -> str:
        """A probe as every host gets it, with a token of its own and the host-side deadline (the
        remediation fixture probes a fixed host once more)."""
        return self._script_for(secrets.token_hex(12), host_deadline_s(self._timeout))

    def submit(self, label: str, host_factory: Callable[[], Any]) -> None:
        with self._lock:
            if label in self._probes:
                return
            run = _Probe(secrets.token_hex(12), cf.Future())
            self._probes[label] = run
            self._queue.put(lambda: self._probe(run, label, host_factory))
            if self._threads < self._workers:
                self._threads += 1
                threading.Thread(target=self._work, name=f"probe worker {self._threads}", daemon=True).start()

    def _work(self) -> None:
        while True:
            self._queue.get()()

    def _probe(self, run: _Probe, label: str, host_factory: Callable[[], Any]) -> None:
        run.started = time.monotonic()
        try:
            run.host = host_factory()
            facts = probe_host(run.host, label, self._script_for(run.token, host_deadline_s(self._timeout), label))
        except BaseException as exc:  # noqa: BLE001 - a probe must always settle its future
            facts = NodeFacts(label, {}, f"cannot run the probe on the host: {type(exc).__name__}: {exc}")
        _settle(run.future, facts)

    def get(self, label: str, host_factory: Callable[[], Any]) -> NodeFacts:
        self.submit(label, host_factory)
        run = self._probes[label]
        while True:
            started = run.started
            left = self._timeout if started is None else started + self._timeout - time.monotonic()
            try:
                return run.future.result(timeout=max(0.0, left))
            except cf.TimeoutError:
                if started is not None:
                    break  # else it waited for a slot all along: its own deadline has not begun
        # settled first: what the ended probe printed until now is not its result
        _settle(run.future, NodeFacts(label, {}, f"the probe did not finish within {self._timeout:g} s "
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

    def close(self) -> None:
        """End every probe still running (the run ends, or was interrupted); waits for none."""
        for run in list(self._probes.values()):
            if not run.future.done():
                self._end(run)
