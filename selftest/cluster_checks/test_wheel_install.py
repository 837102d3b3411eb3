"""The suite installed from its wheel (not editable) into a fresh virtualenv runs from a
folder outside the repository: a node check (``local://``) and a cluster check that needs
the package's manifests (against the simulated cluster).

Offline: the wheel is built without build isolation from a copy of the repository's files
(setuptools comes with the test extras), installed with ``--no-deps --no-index``; the
dependencies come from this virtualenv's site-packages through a ``.pth`` placed after the
fresh site-packages, so the installed ``gpuconform`` is the one imported. pytest imports the
checks in importlib mode, which puts no repository folder on ``sys.path``.
"""
from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from cluster_harness import PROFILE, REPO, by_check

SHIPPED = ("gpuconform/manifests/cuda-vectoradd.yaml", "gpuconform/manifests/gpu-isolation-probe.yaml",
           "gpuconform/profiles/seed-h100.yaml", "gpuconform/profiles/h200-devbox.yaml",
           "gpuconform/report/report.css", "gpuconform/report/results.schema.json")


def _run(*cmd, cwd: Path, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, Path]:
    """(python of a fresh venv with the wheel installed, a work folder outside the repository)."""
    work = tmp_path_factory.mktemp("wheel-install")
    assert not work.resolve().is_relative_to(REPO)
    src = work / "src"
    files = _run("git", "ls-files", "--cached", "--others", "--exclude-standard", cwd=REPO).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
         "-w", work / "dist", src, cwd=work)
    wheel = next((work / "dist").glob("gpuconform-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(SHIPPED) <= names, f"not in the wheel: {sorted(set(SHIPPED) - names)}"
    venv = work / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=work)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=work)
    fresh_site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))", cwd=work).stdout.strip())
    (fresh_site / "zz-gpuconform-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python, work


def _suite(python: Path, work: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    reports = work / f"reports-{len(list(work.glob('reports-*')))}"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.run([str(python), "-m", "pytest", f"--rootdir={REPO}", f"--config-file={REPO / 'pyproject.toml'}",
                           "--import-mode=importlib", "-p", "no:cacheprovider", "-q", f"--report-dir={reports}",
                           *args], cwd=work, capture_output=True, text=True, timeout=300, env=env)
    doc = next(iter(sorted(reports.glob("*.json"))), None)
    assert doc is not None, f"no JSON report (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-4000:]
    return proc, json.loads(doc.read_text())


def test_the_installed_copy_is_imported(installed):
    python, work = installed
    where = _run(python, "-c", "import gpuconform, gpuconform.plugin.plugin as p; from gpuconform import resources; "
                 "print(gpuconform.__file__); print(p.__file__); print(resources.example_profile_path('seed-h100.yaml'))",
                 cwd=work).stdout.split()
    venv = str(python.parent.parent)
    assert all(w.startswith(venv) for w in where), f"imported outside the fresh venv {venv}: {where}"


def test_node_check_from_the_wheel(installed):
    python, work = installed
    proc, doc = _suite(python, work, "-m", "node", "--hosts=local://", f"{REPO}/tests/node/test_reachable.py")
    assert by_check(doc)[("node.reachable", None)]["verdict"] == "pass", proc.stdout[-3000:]


def test_cluster_check_from_the_wheel(installed, platform):
    """cluster.workload.vectoradd_gpu renders manifests/cuda-vectoradd.yaml from the package data."""
    python, work = installed
    proc, doc = _suite(python, work, "-m", "cluster", f"--profile={PROFILE}", f"--kubeconfig={platform.kubeconfig}",
                       f"{REPO}/tests/cluster/test_workloads.py", "-k", "vectoradd_whole_gpu")
    result = by_check(doc).get(("cluster.workload.vectoradd_gpu", None))
    assert result, f"not run: {sorted(by_check(doc))}\n{proc.stdout[-3000:]}"
    assert result["verdict"] == "pass", f"{result}\n{proc.stdout[-3000:]}"
    assert "Test PASSED" in result["evidence"]
