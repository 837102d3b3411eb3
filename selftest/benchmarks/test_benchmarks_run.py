"""Every benchmark script runs as committed, at its smallest size, and prints its figures: a rename
in the bed or the suite breaks this test, not the benchmark unseen. The figures themselves are
not judged here (benchmarks are scripts that print figures, not timed tests)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

#: script -> (its smallest arguments, what its figures look like)
TINY = {
    "k8s_node_probes.py": (["--sizes", "3", "--full-at", "0"], r"(?m)^\s+3\s+[\d.]+\s+[\d.]+\s+\d+\s+[\d.]+\s+\d+\s+3 passed"),
    "cluster_1000_nodes.py": (["--nodes", "3"], r"peak memory \d+ MB\nAPI requests counted by the API server \(apiserver_request_total\): \d+"),
    "report_scale.py": (["--hosts", "3", "--faulty-every", "2", "--synthesize", "30"],
                        r"(?m)^\s+3\s+\d+\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+(.|\n)*^cluster synthetic\s+30\s+\d+(\s+[\d.]+ \(\s*\d+\)){3}$"),
    "ssh_hosts.py": (["--hosts", "2", "--rounds", "1"], r"2 hosts: ratio suite/bound -n 0 [\d.]+ \(median of 1\), "
                                                        r"pytest alone's CPU floor [\d.]+; collect-only process "
                                                        r"[\d.]+ s, pytest alone's [\d.]+ s, with the "
                                                        r"profile [\d.]+ s"),
}


def test_every_benchmark_is_covered():
    scripts = {p.name for p in (REPO / "benchmarks").glob("*.py")} - {"suite_env.py"}   # a helper, not a benchmark
    assert scripts == set(TINY), f"benchmarks without a tiny run here: {sorted(scripts - set(TINY))}"


@pytest.mark.parametrize("script", sorted(TINY))
def test_benchmark_runs_at_its_smallest_size(script, tmp_path):
    args, figures = TINY[script]
    if script in ("k8s_node_probes.py", "cluster_1000_nodes.py"):
        args = [*args, "--state", str(tmp_path / "state")]
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *args], cwd=REPO,
                         capture_output=True, text=True, timeout=600)
    text = out.stdout + out.stderr
    assert out.returncode == 0, f"{script} {' '.join(args)}: rc={out.returncode}\n{text[-3000:]}"
    assert re.search(figures, text), f"{script} printed no figures:\n{text[-3000:]}"
