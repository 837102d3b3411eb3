"""The collector paused while big acyclic structures are built: resumed once, after the last
pause, and only if it ran before the first."""
import gc
import subprocess
import sys
import threading
from pathlib import Path

from gpuconform import gcpause


def test_nested_pauses_resume_once_after_the_last():
    assert gc.isenabled()
    with gcpause.paused():
        assert not gc.isenabled()
        with gcpause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer pause still holds
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off():
    gc.disable()
    try:
        with gcpause.paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_overlapping_pauses_of_threads_leave_it_running():
    """Thread A pauses, B pauses, A ends, B ends: running again (a naive save/restore of each
    pause's own "was it on" would leave it off for good)."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    under_b = []

    def a():
        with gcpause.paused():
            a_in.set()
            b_in.wait(5)
        a_out.set()

    def b():
        a_in.wait(5)
        with gcpause.paused():
            b_in.set()
            a_out.wait(5)
            under_b.append(gc.isenabled())  # A's end must not resume it under B

    threads = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert under_b == [False]
    assert gc.isenabled()


def test_the_plugin_loads_the_suite_with_the_collector_paused_and_leaves_it_running():
    """plugin/plugin.py imports the suite's modules under a pause (issue #27: the collector's
    passes over them were 20 ms of a small run's start): the profile is not loaded when the pause
    begins and is when it ends; afterwards the collector runs again, with what they made frozen
    out of its passes."""
    code = ("import contextlib, gc, sys\n"
            "from gpuconform import gcpause\n"
            "seen = []\n"
            "real = gcpause.paused\n"
            "@contextlib.contextmanager\n"
            "def spy():\n"
            "    seen.append(('on', gc.isenabled(), 'gpuconform.profile' in sys.modules))\n"
            "    with real():\n"
            "        yield\n"
            "    seen.append(('off', 'gpuconform.profile' in sys.modules))\n"
            "gcpause.paused = spy\n"
            "import gpuconform.plugin.plugin\n"
            "print(repr(seen), gc.isenabled(), gc.get_freeze_count() > 0, sep='|')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[2])
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().split("|") == ["[('on', True, False), ('off', True)]", "True", "True"], out.stdout
