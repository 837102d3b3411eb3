"""The collector paused while big acyclic structures are built: resumed once, after the last
pause, and only if it ran before the first."""
import gc
import threading

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
