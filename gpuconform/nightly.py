"""``gpuconform nightly`` and ``gpuconform fetch-baseline``: ci/gpuconform-nightly.sh and
ci/fetch-baseline.py as shipped in the package, so that a CI job or the image needs the installed
suite only, no source tree. The nightly runs with this Python (GPUCONFORM_PYTHON, unless set), the
one gpuconform is installed in."""
from __future__ import annotations

import os
import runpy
import shutil
import sys

from gpuconform import resources


def nightly(args: list[str]) -> int:
    """The nightly script in place of this process (in a pod it stays PID 1 and gets the SIGTERM)."""
    env = {**os.environ, "GPUCONFORM_PYTHON": os.environ.get("GPUCONFORM_PYTHON") or sys.executable}
    script = str(resources.ci_script_path("gpuconform-nightly.sh"))
    os.execve(shutil.which("sh") or "/bin/sh", ["sh", script, *args], env)
    return 0  # not reached


def fetch_baseline(args: list[str]) -> int:
    script = str(resources.ci_script_path("fetch-baseline.py"))
    return runpy.run_path(script)["main"]([script, *args])
