"""Ctrl-C or SIGTERM landing on an instruction without a line number (CPython 3.11) leaves a
traceback entry whose tb_lineno is None; pytest's terminal reporter cannot show it. The suite's
pytest_keyboard_interrupt leaves such entries out, so the interrupted run is still reported."""
import sys
import types

import pytest
from pytest import ExceptionInfo

from gpuconform.plugin.hooks import Hooks


def _interrupt_info() -> ExceptionInfo:
    """A KeyboardInterrupt whose traceback has, between two ordinary entries, one without a line
    number (an instruction offset past the code, as the interpreter reports it there)."""
    try:
        raise KeyboardInterrupt("SIGTERM")
    except KeyboardInterrupt:
        info = ExceptionInfo.from_current()
    real = info.tb
    lineless = types.TracebackType(None, sys._getframe(), 10 ** 6, -1)
    assert lineless.tb_lineno is None
    head = types.TracebackType(lineless, real.tb_frame, real.tb_lasti, real.tb_lineno)
    lineless.tb_next = real
    return ExceptionInfo.from_exc_info((KeyboardInterrupt, info.value, head))


def test_pytest_cannot_show_an_entry_without_a_line():
    with pytest.raises(TypeError):
        _interrupt_info().getrepr(funcargs=True)


def test_the_hook_leaves_such_entries_out_and_keeps_the_others():
    info = _interrupt_info()
    Hooks.pytest_keyboard_interrupt(None, info)
    assert all(e.lineno is not None for e in info.traceback) and len(info.traceback) == 2
    assert "KeyboardInterrupt: SIGTERM" in str(info.getrepr(funcargs=True))
