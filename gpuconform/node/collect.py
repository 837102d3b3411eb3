"""Gathering node facts: one probe per host, many hosts at once, each bounded in time."""
from __future__ import annotations

import concurrent.futures as cf
import threading
from typing import Any, Callable

from gpuconform.node import probe
from gpuconform.node.facts import NodeFacts


def probe_host(host: Any, label: str, script: str) -> NodeFacts:
    """Run the probe on a testinfra host; transport failures become a facts error."""
    try:
        result = host.run(script)
    except RuntimeError as exc:  # testinfra raises with the ssh result on exit 255
        res = exc.args[0] if exc.args else exc
        err = getattr(res, "stderr", None) or str(res)
        return NodeFacts(label, {}, f"cannot reach the host: {err.strip().splitlines()[-1] if err.strip() else err}")
    except Exception as exc:  # paramiko/kubectl/chroot backends raise their own errors
        return NodeFacts(label, {}, f"cannot run the probe on the host: {type(exc).__name__}: {exc}")
    sections = probe.parse(result.stdout)
    if not sections:
        tail = (result.stderr or result.stdout or "").strip().splitlines()[-1:] or [f"exit {result.rc}"]
        return NodeFacts(label, {}, f"the probe printed nothing usable: {tail[0]}")
    return NodeFacts(label, sections)


class FactsPool:
    """Probes every host once, concurrently, and hands out the facts by label."""

    def __init__(self, script: str, timeout_s: float, workers: int = 32):
        self._script = script
        self._timeout = timeout_s
        self._pool = cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="probe")
        self._futures: dict[str, cf.Future] = {}
        self._lock = threading.Lock()

    @property
    def script(self) -> str:
        """The probe every host gets (the remediation fixture probes a fixed host once more)."""
        return self._script

    def submit(self, label: str, host_factory: Callable[[], Any]) -> None:
        with self._lock:
            if label not in self._futures:
                self._futures[label] = self._pool.submit(
                    lambda: probe_host(host_factory(), label, self._script))

    def get(self, label: str, host_factory: Callable[[], Any]) -> NodeFacts:
        self.submit(label, host_factory)
        try:
            return self._futures[label].result(timeout=self._timeout)
        except cf.TimeoutError:
            facts = NodeFacts(label, {}, f"the probe did not finish within {self._timeout:g} s "
                                         f"(profile timeouts.probe_s)")
            with self._lock:
                fut = cf.Future()
                fut.set_result(facts)
                self._futures[label] = fut
            return facts

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
