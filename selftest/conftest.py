"""Shared selftest helpers: where the repo is, and how to run the real suite in a subprocess."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def run_suite(*args: str, report_dir: Path, timeout: float = 600, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict | None]:
    """Run the conformance suite (pytest in a subprocess, from the repo root); return the
    process and the JSON results it wrote into ``report_dir`` (None if none)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--report-dir={report_dir}", *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    files = sorted(report_dir.glob("*.json"))
    return proc, (json.loads(files[-1].read_text()) if files else None)


@pytest.fixture
def suite(tmp_path):
    """Callable running the real suite with reports in a temporary folder."""
    def _run(*args, **kw):
        return run_suite(*args, report_dir=tmp_path / "reports", **kw)
    return _run
