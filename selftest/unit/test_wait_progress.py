"""The one wait helper (gpuconform/cluster/waiting.py): tenacity underneath, ends by its deadline,
and shows one line per wait with the object, its last state and the time left -- rewritten in
place on a terminal, printed on a change of state (or every N seconds) in a CI log."""
from __future__ import annotations

import io
import re
import time

import pytest

from gpuconform.cluster import waiting


class Stream(io.StringIO):
    def __init__(self, tty: bool):
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


@pytest.fixture
def shown(monkeypatch):
    """Progress of waits into a stream: ``shown(tty)`` -> the stream."""
    def use(tty: bool, **kwargs) -> Stream:
        stream = Stream(tty)
        monkeypatch.setattr(waiting, "progress", waiting.Progress.to(stream, quiet_s=0, **kwargs))
        return stream
    return use


def states(*seq: str):
    """An attempt that is never done, whose state goes through ``seq`` (then stays at the last)."""
    seen = list(seq)
    current = [seen[0]]

    def attempt():
        current[0] = seen.pop(0) if seen else current[0]
        return None
    return attempt, lambda: current[0]


def test_log_lines_on_state_change_and_timeout_by_deadline(shown):
    out = shown(tty=False, every_s=60)
    attempt, describe = states("Pending", "Pending", "ContainerCreating", "ContainerCreating", "Running")
    t0 = time.monotonic()
    with pytest.raises(waiting.WaitTimeout) as err:
        waiting.wait_for("pod ns/p to complete", attempt, timeout=1.5, interval=0.2, describe=describe)
    took = time.monotonic() - t0
    assert took < 1.5 + 0.5, f"the wait ended {took:.1f}s after it started, its deadline was 1.5s"
    assert "timed out after 2s waiting for pod ns/p to complete; last state seen: Running" in str(err.value)
    lines = out.getvalue().splitlines()
    waiting_lines = [ln for ln in lines if ln.startswith("gpuconform: waiting for pod ns/p to complete: ")]
    assert [ln.split(": ")[2].split(" (")[0] for ln in waiting_lines] == ["Pending", "ContainerCreating", "Running"], lines
    assert all(ln.endswith("s left)") for ln in waiting_lines), lines
    assert lines[-1].startswith("gpuconform: waited ") and "timed out: Running" in lines[-1], lines
    assert "\r" not in out.getvalue()


def test_log_repeats_an_unchanged_state_every_n_seconds(shown):
    out = shown(tty=False, every_s=0.5)
    attempt, describe = states("Pending")
    with pytest.raises(waiting.WaitTimeout):
        waiting.wait_for("pod ns/p to be scheduled", attempt, timeout=1.6, interval=0.1, describe=describe)
    repeats = [ln for ln in out.getvalue().splitlines() if ln.startswith("gpuconform: waiting for")]
    assert 2 <= len(repeats) <= 5, repeats  # not one per attempt (about 16 of them)


def test_terminal_rewrites_one_line(shown):
    out = shown(tty=True)
    done_after = [3]

    def attempt():
        done_after[0] -= 1
        return "pod-object" if done_after[0] == 0 else None
    result = waiting.wait_for("node n1 nvidia.com/mig.config.state=success", attempt, timeout=5, interval=0.6,
                              describe=lambda: f"mig.config.state={'pending' if done_after[0] else 'success'}")
    assert result == "pod-object"
    text = out.getvalue()
    assert text.startswith("\ngpuconform: waiting for node n1 nvidia.com/mig.config.state=success: "
                           "mig.config.state=pending ("), repr(text)
    assert text.count("\n") == 2, repr(text)  # one line opened, closed once when the wait ends
    assert re.search(r"\rgpuconform: waited \d+s for node n1 nvidia.com/mig.config.state=success: done: "
                     r"mig.config.state=success\x1b\[K\n$", text), repr(text)


def test_transient_errors_retried_with_backoff_until_the_deadline(shown):
    shown(tty=False)

    class Dropped(Exception):
        pass
    calls = []

    def attempt():
        calls.append(time.monotonic())
        raise Dropped()
    t0 = time.monotonic()
    with pytest.raises(waiting.WaitTimeout, match="last state seen: watch dropped"):
        waiting.wait_for("pods", attempt, timeout=1.2, retry_on=(Dropped,), describe=lambda: "watch dropped")
    assert time.monotonic() - t0 < 1.7
    gaps = [b - a for a, b in zip(calls, calls[1:])]
    assert len(calls) >= 3 and gaps[1] > gaps[0] * 1.5, gaps  # exponential backoff, not a busy loop


def test_short_waits_print_nothing(monkeypatch):
    stream = Stream(False)
    monkeypatch.setattr(waiting, "progress", waiting.Progress.to(stream))  # default: quiet 2 s
    assert waiting.wait_for("quick", lambda: "done", timeout=5, describe=lambda: "ok") == "done"
    assert stream.getvalue() == ""


def test_a_long_wait_without_news_still_ends_with_one_line(monkeypatch):
    stream = Stream(False)
    monkeypatch.setattr(waiting, "progress", waiting.Progress.to(stream, quiet_s=0.3))
    with pytest.raises(waiting.WaitTimeout):
        waiting.wait_for("pod ns/p to complete", lambda: None, timeout=0.5, interval=5, describe=lambda: "Pending")
    assert re.fullmatch(r"(gpuconform: waiting for pod ns/p to complete: Pending \(0s left\)\n)?"
                        r"gpuconform: waited [01]s for pod ns/p to complete: timed out: Pending\n", stream.getvalue())


def test_other_errors_end_the_wait_at_once(shown):
    shown(tty=False)

    def attempt():
        raise waiting.Stop("pod disappeared")
    t0 = time.monotonic()
    with pytest.raises(waiting.Stop):
        waiting.wait_for("pod", attempt, timeout=10, describe=lambda: "gone")
    assert time.monotonic() - t0 < 1


def test_a_state_from_the_cluster_cannot_drive_the_terminal(shown):
    """A pod's state or name carrying escape sequences (OSC 52 clipboard, OSC 0 title, clear
    screen) is shown as text without them (#28 finding 9)."""
    out = shown(tty=False, every_s=60)
    hostile = "Pending\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b[2J"
    attempt, describe = states(hostile)
    with pytest.raises(waiting.WaitTimeout):
        waiting.wait_for("pod ns/p\x1b[2J to complete", attempt, timeout=0.5, interval=0.1, describe=describe)
    text = out.getvalue()
    assert "\x1b" not in text and "\x07" not in text, repr(text)
    assert "waiting for pod ns/p to complete: Pending" in text
