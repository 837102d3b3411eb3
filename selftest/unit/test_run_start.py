"""A node run's start (issue #27): the probes start as soon as the inputs are checked, before the
suite's report, hook and cluster modules load; an item pays for no fixture it does not use (the
remediation fixture exists only with --remediate, and no fixture of a check asks for ``request`` or
``pytestconfig``, which make pytest build a fixture definition on every item that uses them)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: run before pytest: each probe pool's first submit prints which of the suite's later modules were loaded
WATCH_SUBMIT = """
import sys
from gpuconform.node import collect
LATER = ("gpuconform.plugin.reporting", "gpuconform.plugin.hooks", "gpuconform.plugin.cluster_fixtures",
         "gpuconform.report.run", "gpuconform.plugin.aiconformance")
submit = collect.FactsPool.submit
def watched(self, hosts):
    hosts = list(hosts)
    if hosts:
        print("SUBMIT loaded: " + ",".join(m for m in LATER if m in sys.modules), flush=True)
    return submit(self, hosts)
collect.FactsPool.submit = watched
"""

#: a plugin that prints every fixture an item's closure holds
CLOSURE = """
class Closure:
    def pytest_collection_finish(self, session):
        print("FIXTURES " + " ".join(sorted({n for i in session.items for n in i.fixturenames})))
"""

#: a plugin that prints, per item, whether it takes a MIG resource and whether it uses the fixture
#: that judges "no MIG resource offered"
MIG_JUDGE = """
class MigJudge:
    def pytest_collection_finish(self, session):
        seen = sorted({tuple(n in i.fixturenames for n in ("gpu_node", "mig_resource", "_nothing_to_judge"))
                       for i in session.items})
        print("MIG %d %s" % (len(session.items), seen))
"""

#: a plugin that prints, for every item, the fixtures of its closure that ask for ``request`` or
#: ``pytestconfig``, less its parameters (pytest's own: a parameter asks for ``request``)
ASKS_REQUEST = """
class AsksRequest:
    def pytest_collection_finish(self, session):
        found = set()
        for item in session.items:
            params = getattr(getattr(item, "callspec", None), "params", {})
            for name, defs in item._fixtureinfo.name2fixturedefs.items():
                if name not in params and {"request", "pytestconfig"} & set(defs[-1].argnames):
                    found.add(name)
        print("ITEMS %d ASK %s" % (len(session.items), " ".join(sorted(found)) or "-"))
"""


def _run(code: str, *args: str, plugins: str = "") -> str:
    """pytest with ``args`` in a fresh interpreter, after ``code``; ``plugins``: a list expression."""
    main = f"import pytest, sys\nsys.exit(pytest.main({list(args)!r}, plugins=[{plugins}]))"
    out = subprocess.run([sys.executable, "-c", code + main], cwd=REPO, capture_output=True, text=True, timeout=300)
    return out.stdout + out.stderr


def _silent_cluster(tmp_path: Path) -> Path:
    """A kubeconfig of a cluster that answers nothing: the checks are still collected."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:9'}}]\n"
                          "contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
                          "users: [{name: u, user: {token: t}}]\n")
    return kubeconfig


def test_the_probes_start_before_the_report_and_cluster_modules_load(tmp_path):
    out = _run(WATCH_SUBMIT, "-q", "-p", "no:cacheprovider", "-m", "node", "-k", "reachable", "--hosts=local://",
               "--profile=profiles/seed-h100.yaml", f"--report-dir={tmp_path}")
    lines = [line for line in out.splitlines() if line.startswith("SUBMIT loaded:")]
    assert lines == ["SUBMIT loaded: "], out[-3000:]
    assert "passed" in out or "failed" in out, out[-3000:]  # the run went on and judged the host


@pytest.mark.parametrize("more, present", [((), False), (("--remediate=plan",), True)])
def test_the_remediation_fixture_exists_only_with_remediate(more, present):
    out = _run(CLOSURE, "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "node", "--hosts=local://",
               "--profile=profiles/seed-h100.yaml", *more, plugins="Closure()")
    fixtures = next((line.split()[1:] for line in out.splitlines() if line.startswith("FIXTURES ")), None)
    assert fixtures is not None and "node" in fixtures and "_gpuconform_blocked_by" in fixtures, out[-3000:]
    assert ("_gpuconform_remediation" in fixtures) is present, out[-3000:]


def test_a_node_check_uses_no_suite_fixture_beyond_host_node_expected_and_the_gate():
    """Each fixture an item uses is looked up again on every item, a session one already made too:
    the node checks' fixtures are closed over the config instead (docs/architecture.md)."""
    out = _run(CLOSURE, "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "node", "--hosts=local://",
               "--profile=profiles/seed-h100.yaml", plugins="Closure()")
    fixtures = next((line.split()[1:] for line in out.splitlines() if line.startswith("FIXTURES ")), None)
    assert fixtures is not None, out[-3000:]
    params = {"required_param", "forbidden_param", "sysctl_key"}  # tests/node/conftest.py: one test per profile item
    assert set(fixtures) - params == {"host", "_gpuconform_host", "node", "expected", "_gpuconform_blocked_by"}, \
        fixtures  # not "request" either: pytest builds a fixture definition for it on every check


@pytest.mark.parametrize("layer", ["node", "cluster", "kubeflow"])
def test_no_fixture_of_a_check_asks_for_request(layer, tmp_path):
    kubeconfig = _silent_cluster(tmp_path)
    out = _run(ASKS_REQUEST, "--collect-only", "-q", "-p", "no:cacheprovider", "-m", layer, "--hosts=local://",
               f"--kubeconfig={kubeconfig}", "--profile=profiles/seed-h100.yaml", plugins="AsksRequest()")
    line = next((line.split() for line in out.splitlines() if line.startswith("ITEMS ")), None)
    assert line is not None and int(line[1]) > 0, out[-3000:]
    assert line[3:] == ["-"], f"fixtures that ask for request or pytestconfig: {line[3:]}"


def test_only_the_mig_checks_run_the_nothing_to_judge_fixture(tmp_path):
    """The per-worker checks (thousands of items at fleet size) pay for no fixture that judges an
    absent MIG resource: "no GPU worker" is a skip mark set where the items are made; every check
    that takes a MIG resource has the fixture, which skips it saying why when none is offered."""
    kubeconfig = _silent_cluster(tmp_path)
    out = _run(MIG_JUDGE, "--collect-only", "-q", "-p", "no:cacheprovider", "-m", "cluster and not disruptive",
               f"--kubeconfig={kubeconfig}", "--profile=profiles/seed-h100.yaml", plugins="MigJudge()")
    line = next((line for line in out.splitlines() if line.startswith("MIG ")), None)
    assert line is not None, out[-3000:]
    seen = ast.literal_eval(line.split(" ", 2)[2])  # (takes gpu_node, takes mig_resource, uses the fixture)
    assert (True, False, False) in seen and (False, True, True) in seen, seen
    assert not [s for s in seen if s[0] and s[2]], f"a per-worker check uses _nothing_to_judge: {seen}"
    assert not [s for s in seen if s[1] and not s[2]], f"a MIG check lacks _nothing_to_judge: {seen}"
