"""-m selects exactly the checks it selected before, while a layer's folder that -m cannot select is
not imported at all (gpuconform/plugin/hooks.py pytest_ignore_collect; issue #27: a node run loads
no Kubernetes client and no Kubeflow module)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
COUNT = """
import sys, pytest
from _pytest.mark.expression import Expression
class Count:
    def pytest_collection_finish(self, session):
        for expr in sys.argv[1:]:
            e = Expression.compile(expr)
            n = sum(e.evaluate(lambda name, **kw: any(m.name == name for m in item.iter_markers()))
                    for item in session.items)
            print(f"EXPECT {n} {expr}")
pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests"], plugins=[Count()])
"""
EXPRESSIONS = ("node", "cluster", "kubeflow", "not node", "cluster and not mig", "node or kubeflow", "mig",
               "security or node", "not (cluster or kubeflow)")


def _selected(expr: str, code_before: str = "") -> tuple[int, str]:
    code = code_before + f"import pytest, sys\nsys.exit(pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', '-m', {expr!r}, 'tests']))"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    m = re.search(r"(\d+)(?:/\d+)? tests? collected", out.stdout)
    assert m, out.stdout[-2000:] + out.stderr[-2000:]
    return int(m[1]), out.stdout


def test_each_expression_selects_what_it_selects_over_every_check():
    out = subprocess.run([sys.executable, "-c", COUNT, *EXPRESSIONS], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    expected = {line.split(" ", 2)[2]: int(line.split()[1]) for line in out.stdout.splitlines() if line.startswith("EXPECT ")}
    assert set(expected) == set(EXPRESSIONS), out.stdout[-2000:] + out.stderr[-2000:]
    assert {e: _selected(e)[0] for e in EXPRESSIONS} == expected


@pytest.mark.parametrize("expr, blocked", [("node", ("kubernetes", "gpuconform.kubeflow", "gpuconform.cluster.connect")),
                                           ("cluster", ("gpuconform.kubeflow",))])
def test_a_layer_run_imports_no_other_layer(expr, blocked):
    block = (f"import sys\nclass Block:\n    def find_spec(self, name, path=None, target=None):\n"
             f"        if any(name == b or name.startswith(b + '.') for b in {blocked!r}):\n"
             f"            raise ImportError(name + ' imported by a -m {expr} run')\n"
             f"sys.meta_path.insert(0, Block())\n")
    n, out = _selected(expr, block)
    assert n > 0 and not re.search(r"\d+ errors?\b|Interrupted|ImportError", out), out[-2000:]


def test_aiconformance_is_opt_in_and_only_its_checks():
    """-m aiconformance collects the aiconf checks and the suite's checks that decide a requirement
    (gpuconform/aiconformance/mapping.py), no node or Kubeflow folder imported; -m cluster and a run
    without -m leave the aiconf checks out (tests/cluster/README.md says why) and keep the mapped ones."""
    block = ("import sys\nclass Block:\n    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'gpuconform.kubeflow' or name.startswith('gpuconform.kubeflow.'):\n"
             "            raise ImportError(name)\nsys.meta_path.insert(0, Block())\n")
    n, out = _selected("aiconformance", block)
    items = [line for line in out.splitlines() if "::" in line]
    assert n == len(items) > 0 and all(i.startswith("tests/cluster/") for i in items), out[-2000:]
    assert any(i.startswith("tests/cluster/test_aiconformance.py::") for i in items), out[-2000:]
    assert any(i.startswith("tests/cluster/test_workloads.py::test_no_gpu_without_request") for i in items), out[-2000:]
    for expr in ("cluster", "not node"):
        listed = _selected(expr)[1]
        assert "test_aiconformance" not in listed and "test_workloads.py::test_no_gpu_without_request" in listed, listed[-2000:]


#: run before pytest: reading a checklist of the AI Conformance program stops the run, naming the -m
REFUSE_CHECKLIST = ("from gpuconform.aiconformance import checklist\n"
                    "def refuse(version):\n"
                    "    raise RuntimeError('AI conformance checklist ' + version + ' read')\n"
                    "checklist.load = refuse\n")


@pytest.mark.parametrize("expr, reads", [("node", False), ("cluster", True)])
def test_only_a_run_whose_checks_may_decide_a_requirement_reads_the_checklist(expr, reads):
    """The export's checklist is read when a check may decide one of its requirements (issue #27):
    a node run reads none; a cluster run, whose checks do, reads it (and so trips the refusal)."""
    code = REFUSE_CHECKLIST + ("import pytest, sys\nsys.exit(pytest.main(['--collect-only', '-q', "
                               f"'-p', 'no:cacheprovider', '-m', {expr!r}, 'tests']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    text = out.stdout + out.stderr
    assert ("AI conformance checklist" in text) == reads, text[-2000:]
    if not reads:
        assert out.returncode == 0 and re.search(r"\d+(/\d+)? tests? collected", out.stdout), text[-2000:]
