"""ci/gpuconform-nightly.sh refuses, in one line and with exit 4 before anything runs, what
would make a nightly meaningless: no profile, an unreadable one, a Python without gpuconform
(never a system python3 that dies on a missing module), and the node layer selected without
hosts (testinfra would then judge the pod or CI runner itself as a GPU host)."""
from __future__ import annotations

import subprocess
import sys

import pytest

import incluster_harness as h

SCRIPT = h.REPO / "ci" / "gpuconform-nightly.sh"


def nightly(tmp_path, **env) -> subprocess.CompletedProcess:
    base = {"PATH": "/usr/bin:/bin", "GPUCONFORM_PYTHON": sys.executable,
            "GPUCONFORM_REPORT_DIR": str(tmp_path / "reports")}
    return subprocess.run(["sh", str(SCRIPT)], env={**base, **env}, capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)


@pytest.mark.parametrize("env,says", [
    ({}, "GPUCONFORM_PROFILE is not set"),
    ({"GPUCONFORM_PROFILE": "nowhere.yaml"}, "GPUCONFORM_PROFILE=nowhere.yaml is not a readable file"),
    ({"GPUCONFORM_PROFILE": str(h.REPO / "profiles" / "seed-h100.yaml")},
     "GPUCONFORM_MARKERS selects the node layer but no hosts are given"),
    ({"GPUCONFORM_PROFILE": str(h.REPO / "profiles" / "seed-h100.yaml"), "GPUCONFORM_MARKERS": "node and mig"},
     "GPUCONFORM_MARKERS selects the node layer but no hosts are given"),
])
def test_refused_before_anything_runs(tmp_path, env, says):
    proc = nightly(tmp_path, **env)
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [f"gpuconform-nightly: {proc.stderr.split(': ', 1)[1].strip()}"]
    assert says in proc.stderr
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())


def test_a_python_without_gpuconform_is_refused(tmp_path):
    """The issue's CI runner: the script's python3 had no gpuconform (exit 3, No module named testinfra)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "bare")], check=True)
    python = tmp_path / "bare" / "bin" / "python"
    proc = nightly(tmp_path, GPUCONFORM_PROFILE=str(h.REPO / "profiles" / "seed-h100.yaml"), GPUCONFORM_PYTHON=str(python))
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"gpuconform-nightly: GPUCONFORM_PYTHON={python} has no gpuconform installed: run `gpuconform nightly` of the "
        f"environment it is installed in, or set GPUCONFORM_PYTHON to that environment's python"]


def test_hosts_given_or_node_left_out_pass_the_guard(tmp_path):
    """With GPUCONFORM_HOSTS, or without node in the markers, the suite is started (here it stops
    at the missing kubeconfig: exit 4 from the suite, said by the suite)."""
    seed = str(h.REPO / "profiles" / "seed-h100.yaml")
    for env in ({"GPUCONFORM_HOSTS": "ssh://root@gpu-1", "GPUCONFORM_MARKERS": "node and cluster"},
                {"GPUCONFORM_MARKERS": "cluster"}):
        proc = nightly(tmp_path, GPUCONFORM_PROFILE=seed, GPUCONFORM_KUBECONFIG=str(tmp_path / "none"), **env)
        assert "gpuconform-nightly: gpuconform run -m" in proc.stdout, proc.stdout + proc.stderr
        assert "no hosts are given" not in proc.stderr


def test_one_baseline_per_profile_name(tmp_path):
    """Two profiles sharing a report folder each read and keep their own baseline, keyed by the
    profile's name: (issue #25; the suite also refuses a baseline of another profile)."""
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "baseline-seed-h100.json").write_text("{}")
    other = tmp_path / "pool-b.yaml"
    other.write_text((h.REPO / "profiles" / "seed-h100.yaml").read_text().replace("name: seed-h100", "name: pool b", 1))
    said = {}
    for name, path in (("seed", h.REPO / "profiles" / "seed-h100.yaml"), ("other", other)):
        proc = nightly(tmp_path, GPUCONFORM_PROFILE=str(path), GPUCONFORM_MARKERS="cluster",
                       GPUCONFORM_KUBECONFIG=str(tmp_path / "none"))
        said[name] = proc.stdout
    assert f"gpuconform-nightly: baseline (last accepted run): {reports}/baseline-seed-h100.json" in said["seed"], said
    assert f"gpuconform-nightly: no baseline at {reports}/baseline-pool_b.json" in said["other"], said
