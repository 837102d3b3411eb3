"""The garbage collector paused while a big structure without cycles is built.

Decoding the API server's list of 6,000 validator pods allocates millions of objects; the
collector, counting them, starts full passes over everything the run holds (measured: 1 s of a
3,000-node cluster run). Decoded JSON has no cycles, so there is nothing for it to find.
Nested and concurrent pauses (threads decoding at once) resume it once, after the last one, and
only if it was running before the first (see also gpuconform/plugin/heap.py).

What was built while paused is frozen out of the collector's passes when the last pause ends
(``gc.freeze``): left in its youngest generation, the next allocations would walk those millions
of objects once per generation they pass through (measured: 0.9 s of a 3,000-node cluster run,
growing with the fleet). The cluster's lists live until the run ends anyway (read once).
"""
from __future__ import annotations

import contextlib
import gc
import threading

_lock = threading.Lock()
_depth = 0
_resume = False


@contextlib.contextmanager
def paused():
    global _depth, _resume
    with _lock:
        if _depth == 0:
            _resume = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.freeze()
                if _resume:
                    gc.enable()
