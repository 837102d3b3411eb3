"""Start, record and stop the test bed's processes without leaving orphans.

Every process runs in its own session (so one signal reaches it and all its children), writes
its output to ``<state>/logs/<name>.log`` and is recorded in ``<state>/pids/<name>.pid`` as
``<pid> <start-time>``; the start time (from /proc) makes sure a recycled pid is never killed.

Two lifetimes:
* attached (pytest fixture): children get PR_SET_PDEATHSIG=SIGKILL, so even a SIGKILLed pytest
  takes them along; ``atexit`` and SIGTERM/SIGINT handlers stop them on a normal or Ctrl-C exit;
* detached (``make testbed-up``): they outlive the starting command; ``make testbed-down`` reads
  the pid files and stops them.
Whatever a previous, interrupted run left in the same state folder is stopped before a start.
"""
from __future__ import annotations

import atexit
import ctypes
import dataclasses
import os
import signal
import subprocess
import threading
from pathlib import Path
from typing import Iterable, Sequence

from testbed.waiting import GiveUp, wait_for

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:  # runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (proc(5) field 3 on), None if no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # the command name (field 2) may hold spaces; fields after the last ')' are fixed
    return stat.rsplit(")", 1)[1].split()


def proc_start_time(pid: int) -> str | None:
    """Start time of ``pid`` in clock ticks since boot, or None if it does not exist."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] == "Z":  # a zombie is gone for our purposes
        return None
    return fields[19]


def cpu_seconds(pids: Iterable[int]) -> float:
    """User+system CPU seconds the processes ``pids`` have used so far (those still there)."""
    ticks = 0
    for pid in pids:
        fields = _stat_fields(pid)
        if fields is not None:
            ticks += int(fields[11]) + int(fields[12])  # utime, stime: proc(5) fields 14 and 15
    return ticks / os.sysconf("SC_CLK_TCK")


@dataclasses.dataclass
class Recorded:
    name: str
    pid: int
    start_time: str

    def alive(self) -> bool:
        return proc_start_time(self.pid) == self.start_time


class Supervisor:
    """Owns the processes of one state folder."""

    def __init__(self, state_dir: Path, attached: bool = True):
        self.state_dir = Path(state_dir)
        self.pid_dir = self.state_dir / "pids"
        self.log_dir = self.state_dir / "logs"
        self.attached = attached
        self._popen: dict[str, subprocess.Popen] = {}
        self._lock = threading.Lock()
        self._hooks_installed = False

    # -- starting ---------------------------------------------------------------------------
    def start(self, name: str, argv: Sequence[str], env: dict[str, str] | None = None) -> subprocess.Popen:
        self.pid_dir.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        if self.attached:
            self._install_hooks()
        log = open(self.log_dir / f"{name}.log", "ab")
        try:
            proc = subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True, env=env, cwd=self.state_dir,
                preexec_fn=_die_with_parent if self.attached else None,
            )
        finally:
            log.close()
        start_time = proc_start_time(proc.pid) or "0"
        (self.pid_dir / f"{name}.pid").write_text(f"{proc.pid} {start_time}\n")
        with self._lock:
            self._popen[name] = proc
        return proc

    def exited(self, name: str) -> int | None:
        """Exit code of a process this supervisor started, None while it runs."""
        proc = self._popen.get(name)
        return None if proc is None else proc.poll()

    def give_up_if_exited(self, *names: str) -> bool:
        """True while every named process runs; else :class:`GiveUp` (ends a wait at once) with
        the exit code and the last lines of its log."""
        for name in names:
            rc = self.exited(name)
            if rc is not None:
                raise GiveUp(f"{name} exited with code {rc}; last log lines:\n{self.log_tail(name)}")
        return True

    def log_tail(self, name: str, lines: int = 20) -> str:
        path = self.log_dir / f"{name}.log"
        if not path.exists():
            return "(no log)"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    # -- what is recorded -------------------------------------------------------------------
    def recorded(self) -> list[Recorded]:
        out = []
        if not self.pid_dir.is_dir():
            return out
        for f in sorted(self.pid_dir.glob("*.pid")):
            try:
                pid, start = f.read_text().split()
                out.append(Recorded(f.stem, int(pid), start))
            except ValueError:
                f.unlink(missing_ok=True)
        return out

    def alive(self) -> list[Recorded]:
        return [r for r in self.recorded() if r.alive()]

    # -- stopping ---------------------------------------------------------------------------
    def stop_all(self, timeout: float = 15.0) -> list[str]:
        """Stop every recorded process (newest first): SIGTERM to its process group, then
        SIGKILL after ``timeout``. Returns the names of those that had to be killed."""
        records = {r.name: r for r in self.recorded()}
        started = {r.name: (r.start_time, r.pid) for r in records.values()}
        # newest first, one at a time: the API server shuts down in ~1 s while etcd still
        # answers, but waits ~10 s on it once etcd is gone
        names = sorted(records, key=lambda n: (int(started[n][0]), started[n][1]), reverse=True)
        killed = [name for name in names if not self._stop(records[name], timeout)]
        with self._lock:
            self._popen.clear()
        return killed

    def stop(self, name: str, timeout: float = 15.0) -> bool:
        """Stop one recorded process (a controller of the bed whose outage is a fault); False
        when it needed SIGKILL."""
        record = next((r for r in self.recorded() if r.name == name), None)
        graceful = record is None or self._stop(record, timeout)
        with self._lock:
            self._popen.pop(name, None)
        return graceful

    def _stop(self, rec: Recorded, timeout: float) -> bool:
        """SIGTERM to its process group, SIGKILL after ``timeout``; its pid file goes."""
        self._signal(rec, signal.SIGTERM)
        graceful = self._wait_gone(rec.name, rec, timeout)
        if not graceful:
            self._signal(rec, signal.SIGKILL)
            self._wait_gone(rec.name, rec, 5)
        (self.pid_dir / f"{rec.name}.pid").unlink(missing_ok=True)
        return graceful

    def _wait_gone(self, name: str, rec: Recorded, timeout: float) -> bool:
        proc = self._popen.get(name)
        if proc is not None:  # our own child: wait() reaps it
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        try:  # recorded by an earlier run: poll /proc under a deadline
            wait_for(f"{name} (pid {rec.pid}) to exit", lambda: not rec.alive(), timeout, interval=0.1)
        except TimeoutError:
            return False
        return True

    @staticmethod
    def _signal(rec: Recorded, sig: int) -> None:
        if not rec.alive():
            return
        try:
            os.killpg(rec.pid, sig)  # each process leads its own session/group
        except ProcessLookupError:
            return
        except PermissionError:
            os.kill(rec.pid, sig)

    # -- hooks for the attached lifetime --------------------------------------------------
    def _install_hooks(self) -> None:
        if self._hooks_installed:
            return
        self._hooks_installed = True
        atexit.register(self.stop_all)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            previous = signal.getsignal(sig)

            def handler(signum, frame, previous=previous):
                self.stop_all()
                if callable(previous):
                    previous(signum, frame)
                else:
                    raise SystemExit(128 + signum)

            signal.signal(sig, handler)
        # SIGINT stays KeyboardInterrupt: pytest unwinds its fixtures, atexit covers the rest.
