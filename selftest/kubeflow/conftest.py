"""The session's Kubeflow test bed (testbed/kubeflow): control plane with the Kubeflow objects,
real dex and oauth2-proxy over HTTPS, the web-app stand-in. Every test that applies a fault
heals it afterwards (``fault``), so tests run in any order.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from runner import run_suite, running_kubeflow_bed

REPO = Path(__file__).resolve().parents[2]
STATE_ROOT = REPO / ".state" / "selftest-kubeflow"
HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    config.addinivalue_line("markers", "testbed_kubeflow: proves the kubeflow layer against the Kubeflow test bed")


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(item.path).is_relative_to(HERE):
            item.add_marker(pytest.mark.testbed_kubeflow)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def kubeflow_bed():
    with running_kubeflow_bed(STATE_ROOT) as bed:
        yield bed


class Results:
    """One run of ``pytest -m kubeflow`` against the bed: verdicts and messages by check."""

    def __init__(self, proc, doc: dict | None, report_dir: Path):
        self.proc, self.doc, self.report_dir = proc, doc, report_dir
        assert doc is not None, f"the suite wrote no JSON results:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}"
        self.results = doc["results"]

    def one(self, check_id: str, param: str | None = None) -> dict:
        found = [r for r in self.results if r["check_id"] == check_id and (param is None or r["param"] == param)]
        assert len(found) == 1, f"{check_id}[{param}]: {len(found)} results in {[(r['check_id'], r['param']) for r in self.results]}"
        return found[0]

    def verdicts(self) -> dict[str, str]:
        return {f"{r['check_id']}[{r['param']}]" if r["param"] else r["check_id"]: r["verdict"] for r in self.results}

    def text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.report_dir.iterdir() if p.is_file())


@pytest.fixture
def run_kubeflow(kubeflow_bed, tmp_path):
    """Runs the kubeflow layer against the bed; ``k`` narrows to some checks, ``env`` changes the
    passwords given, other keywords the profile's kubeflow section (``field=None``: its default)."""
    count = [0]

    def run(*, k: str | None = None, env: dict | None = None, **profile_changes) -> Results:
        count[0] += 1
        folder = tmp_path / f"run{count[0]}"
        folder.mkdir()
        profile = kubeflow_bed.profile(folder / "profile.yaml", **profile_changes)
        args = ["-m", "kubeflow", f"--profile={profile}", f"--kubeconfig={kubeflow_bed.cluster.kubeconfig}",
                "-q"]
        if k:
            args += ["-k", k]
        proc, doc = run_suite(*args, report_dir=folder / "reports", timeout=300,
                              env={**kubeflow_bed.env, **(env or {})})
        return Results(proc, doc, folder / "reports")
    return run


@pytest.fixture
def fault(kubeflow_bed):
    """Apply faults for one test: ``fault.stack(**settings)``, ``fault.dex_down()``,
    ``fault.webapps(fail_prefixes=..., open_tenants=...)``, the cluster-side ones below; healed after."""
    healers = []

    class Faults:
        def stack(self, **settings):
            kubeflow_bed.stack.restart(**settings)
            healers.append(lambda: kubeflow_bed.stack.restart())

        def dex_down(self):
            kubeflow_bed.stack.stop_process("dex")
            healers.append(lambda: kubeflow_bed.stack.restart())

        def webapps(self, **attrs):
            apps = kubeflow_bed.stack.webapps
            old = {a: getattr(apps, a) for a in attrs}
            for a, v in attrs.items():
                setattr(apps, a, v)
            healers.append(lambda: [setattr(apps, a, v) for a, v in old.items()])

        def extra_cluster_admin(self):
            kubeflow_bed.objects.add_extra_cluster_admin()
            healers.append(kubeflow_bed.objects.remove_extra_cluster_admin)

        def issuer_not_ready(self):
            kubeflow_bed.objects.set_issuer_ready(False)
            healers.append(lambda: kubeflow_bed.objects.set_issuer_ready(True))

        def ingress_elsewhere(self):
            kubeflow_bed.objects.route_ingress_elsewhere()
            healers.append(kubeflow_bed.objects.restore_ingress)

        def ingress_gone(self):
            kubeflow_bed.objects.delete_ingress()
            healers.append(kubeflow_bed.objects.restore_ingress)

        def component_gone(self, namespace, name):
            kubeflow_bed.objects.break_component(namespace, name)
            healers.append(lambda: kubeflow_bed.objects.heal_component(namespace, name))

    yield Faults()
    for heal in reversed(healers):
        heal()
