"""Running the real conformance suite in a subprocess, as a user would, and reading its results."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run_suite(*args: str, report_dir: Path, timeout: float = 600,
              env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict | None]:
    """``pytest <args>`` from the repo root with reports in ``report_dir``; returns the process
    and the JSON results it wrote (None if it wrote none)."""
    report_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--report-dir={report_dir}", *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    files = sorted(report_dir.glob("*.json"))
    return proc, (json.loads(files[-1].read_text()) if files else None)
