"""Running the real conformance suite in a subprocess, as a user would, and reading its results."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterator

from gpuconform.report import model as results_file

REPO = Path(__file__).resolve().parent.parent


def run_suite(*args: str, report_dir: Path, timeout: float = 600, env: dict | None = None,
              wrapper: tuple[str, ...] = ()) -> tuple[subprocess.CompletedProcess, dict | None]:
    """``pytest <args>`` from the repo root with reports in ``report_dir`` (run by ``wrapper``,
    e.g. in a network namespace, when given); returns the process and the JSON results it wrote
    (None if it wrote none)."""
    proc = subprocess.run([*wrapper, *_command(args, report_dir)], cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    return proc, json_results(report_dir)


def start_suite(*args: str, report_dir: Path) -> subprocess.Popen:
    """``pytest <args>`` started in the background (to be signalled), output on one text pipe."""
    return subprocess.Popen(_command(args, report_dir), cwd=REPO, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def json_results(report_dir: Path) -> dict | None:
    """The JSON results a run wrote in ``report_dir`` (the newest) with whole records
    (``model.read``), None if it wrote none."""
    files = sorted(report_dir.glob("*.json"))
    return results_file.read(files[-1].read_text()) if files else None


def _command(args: tuple[str, ...], report_dir: Path) -> list[str]:
    report_dir.mkdir(parents=True, exist_ok=True)
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", f"--report-dir={report_dir}", *args]


@contextlib.contextmanager
def process_state(root: Path, stop_leftovers: Callable[[Path], None]) -> Iterator[Path]:
    """A state folder of this pytest process (``root/<pid>``: concurrent runs need their own
    ports and files), removed afterwards. Folders of runs whose process is gone are handed to
    ``stop_leftovers`` and removed first."""
    for folder in root.glob("*"):
        if folder.name.isdigit() and int(folder.name) != os.getpid() and not Path(f"/proc/{folder.name}").exists():
            stop_leftovers(folder)
            shutil.rmtree(folder, ignore_errors=True)
    state = root / str(os.getpid())
    try:
        yield state
    finally:
        shutil.rmtree(state, ignore_errors=True)


@contextlib.contextmanager
def running_kubeflow_bed(root: Path) -> Iterator:
    """A Kubeflow test bed (testbed/kubeflow) in a state folder of this process under ``root``,
    stopped afterwards; beds left by dead runs are stopped first."""
    from testbed.cluster.procs import Supervisor
    from testbed.kubeflow.bed import KubeflowBed

    def stop_leftovers(folder: Path) -> None:
        for sub in ("login", "cluster"):
            Supervisor(folder / sub).stop_all()

    with process_state(root, stop_leftovers) as state:
        bed = KubeflowBed(state, attached=True)
        bed.start()
        try:
            yield bed
        finally:
            bed.stop()
