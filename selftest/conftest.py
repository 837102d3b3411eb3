"""Shared selftest fixtures (the runner itself is in runner.py, importable from every folder)."""
from __future__ import annotations

import pytest

from runner import run_suite


@pytest.fixture
def suite(tmp_path):
    """Callable running the real suite with reports in a temporary folder."""
    def _run(*args, **kw):
        return run_suite(*args, report_dir=tmp_path / "reports", **kw)
    return _run
