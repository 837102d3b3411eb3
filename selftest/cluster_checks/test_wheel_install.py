"""The suite installed from its wheel (not editable) into a fresh virtualenv runs from an empty
folder outside the repository, as a user runs it (issue #25): ``gpuconform run`` runs the checks
shipped in the package, with pytest's arguments and a profile named by its packaged example,
writes the report in ./reports and exits as the README's table says; a node run on this machine
(``local://``, no GPU) is REJECTED, exit 1; a cluster check renders the package's manifests
(against the simulated cluster). Bad input and the issue's own command (plain pytest, where no
checks are) are exit 4 and one line, never pytest's exit 5 "no tests ran".

The wheel and the fresh virtualenv: selftest/wheel.py (offline)."""
from __future__ import annotations

import os
import subprocess
import zipfile
from pathlib import Path

import pytest

import wheel as wheel_mod
from cluster_harness import PROFILE, REPO, by_check
from gpuconform.report import model as results_file

SHIPPED = ("gpuconform/manifests/cuda-vectoradd.yaml", "gpuconform/manifests/gpu-isolation-probe.yaml",
           "gpuconform/profiles/seed-h100.yaml", "gpuconform/profiles/h200-devbox.yaml",
           "gpuconform/report/report.css", "gpuconform/report/results.schema.json",
           "gpuconform/tests/node/test_reachable.py", "gpuconform/tests/node/conftest.py",
           "gpuconform/tests/cluster/test_workloads.py", "gpuconform/tests/kubeflow/conftest.py",
           "gpuconform/pyproject.toml")


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The python of a fresh venv with the wheel installed."""
    work = tmp_path_factory.mktemp("wheel-install")
    wheel = wheel_mod.build(work)
    names = set(zipfile.ZipFile(wheel).namelist())
    assert set(SHIPPED) <= names, f"not in the wheel: {sorted(set(SHIPPED) - names)}"
    assert not any(n.startswith(("tests/", "gpuconform/tests/__pycache__")) for n in names), sorted(names)
    return wheel_mod.fresh_venv(work / "venv", wheel)


def _user(python: Path, folder: Path, *command: str) -> subprocess.CompletedProcess:
    """``command`` (gpuconform, python …) of the fresh venv, run in ``folder`` as a user would."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "GPUCONFORM_PROFILE")}
    exe = python.with_name(command[0])
    proc = subprocess.run([str(exe), *command[1:]], cwd=folder, capture_output=True, text=True, timeout=300, env=env)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "Warning" not in proc.stdout, proc.stdout[-4000:]
    return proc


def _report(folder: Path, proc: subprocess.CompletedProcess) -> dict:
    docs = sorted((folder / "reports").glob("*.json"))
    assert docs, f"no JSON report in {folder}/reports (exit {proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
    assert docs[-1].with_suffix(".html").is_file()
    return results_file.read(docs[-1].read_text())


def test_the_installed_copy_is_imported(installed, tmp_path):
    where = wheel_mod.run(installed, "-c", "import gpuconform, gpuconform.plugin.plugin as p, gpuconform.suite as s; "
                          "from gpuconform import resources; print(gpuconform.__file__); print(p.__file__); "
                          "print(resources.example_profile_path('seed-h100.yaml')); print(s.folder())",
                          cwd=tmp_path).stdout.split()
    venv = str(installed.parent.parent)
    assert all(w.startswith(venv) for w in where), f"imported outside the fresh venv {venv}: {where}"


def test_gpuconform_run_node_checks_from_an_empty_folder(installed, tmp_path):
    """The README's table: no GPU here, so checks fail: REJECTED, exit 1, the report in ./reports."""
    proc = _user(installed, tmp_path, "gpuconform", "run", "-m", "node", "--hosts=local://", "--profile=seed-h100.yaml")
    doc = _report(tmp_path, proc)
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert doc["verdict"]["word"] == "REJECTED" and "gpuconform: REJECTED" in proc.stdout
    assert by_check(doc)[("node.reachable", None)]["verdict"] == "pass", proc.stdout[-3000:]
    assert {r["check_id"].split(".")[0] for r in doc["results"]} == {"node"}
    assert len(doc["results"]) > 30  # every node check ran, from the package
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]  # nothing else written here
    assert f"rootdir: {installed.parent.parent}/lib/" in proc.stdout  # the checks of the package


@pytest.mark.parametrize("command,says", [
    (("gpuconform", "run", "--no-such-option"), "ERROR: gpuconform run: unrecognized arguments: --no-such-option"),
    (("gpuconform", "run", "-m", "node", "--profile=no-such-profile"), "ERROR: no-such-profile: cannot read profile"),
    (("gpuconform", "run", "-m", "node", "--hosts=local://", "--profile"), "ERROR: gpuconform run: argument --profile"),
    # the command: pytest where no checks are
    (("python", "-m", "pytest", "-m", "node", "--hosts=local://", "--profile=seed-h100"),
     "ERROR: --profile=seed-h100: no gpuconform checks here"),
])
def test_bad_input_in_an_empty_folder_is_one_line_and_exit_4(installed, tmp_path, command, says):
    proc = _user(installed, tmp_path, *command)
    assert proc.returncode == 4, proc.stdout[-2000:] + proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(says), proc.stderr
    assert not list(tmp_path.iterdir())  # nothing ran, nothing written


def test_cluster_check_from_the_wheel(installed, platform, tmp_path):
    """cluster.workload.vectoradd_gpu renders manifests/cuda-vectoradd.yaml from the package data."""
    proc = _user(installed, tmp_path, "gpuconform", "run", "-m", "cluster", f"--profile={PROFILE.name}",
                 f"--kubeconfig={platform.kubeconfig}", "-k", "vectoradd_whole_gpu")
    doc = _report(tmp_path, proc)
    result = by_check(doc).get(("cluster.workload.vectoradd_gpu", None))
    assert result, f"not run: {sorted(by_check(doc))}\n{proc.stdout[-3000:]}"
    assert result["verdict"] == "pass", f"{result}\n{proc.stdout[-3000:]}"
    assert "Test PASSED" in result["evidence"]
    assert f"{REPO}/tests" not in proc.stdout and f"{REPO}/profiles" not in proc.stdout  # from the package
    assert f"rootdir: {installed.parent.parent}/lib/" in proc.stdout
