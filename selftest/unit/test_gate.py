"""The one gate of the three layers (gpuconform/plugin/gating.py), on stand-in checks: the
layer's own first check blocks everything else of the layer; a prerequisite is judged by calling
its own function with the same values (so order and selection do not matter); a check of two
layers is gated by both."""
from __future__ import annotations

import types

import pytest

from gpuconform import checks
from gpuconform.plugin import gating


@pytest.fixture
def registry(monkeypatch):
    """Fresh check registry and layer table; ``declare(id, fn, needs)``."""
    monkeypatch.setattr(checks, "REGISTRY", {})
    monkeypatch.setattr(gating, "REGISTRY", checks.REGISTRY)
    monkeypatch.setattr(gating, "GATES", {})

    def declare(check_id: str, fn, needs=()):
        checks.check(check_id, f"rule of {check_id}", needs=list(needs))(fn)
    return declare


def request_for(check_id: str, *fixtures: str):
    """A stand-in pytest item of the check ``check_id`` asking for ``fixtures``."""
    entry = checks.REGISTRY[check_id]
    mark = types.SimpleNamespace(kwargs={"id": check_id, "needs": entry["needs"]})
    return types.SimpleNamespace(get_closest_marker=lambda name: mark if name == "check" else None,
                                 fixturenames=list(fixtures), config=types.SimpleNamespace(stash={}))


def blocked_by(item) -> str | None:
    """The gate's answer for ``item`` (the subjects here ask for no fixture value)."""
    return gating.blocked_by(item, {}.__getitem__)


def test_layer_down_blocks_all_but_its_first_check(registry):
    registry("n.reachable", lambda node: None)
    registry("n.driver", lambda node: None)
    gating.register(gating.LayerGate("node", "n.reachable", "host answers", lambda item, value: gating.Subject("h1", dict, down="ssh: timed out")))
    assert blocked_by(request_for("n.reachable", "node")) is None
    assert blocked_by(request_for("n.driver", "node")) == "blocked by n.reachable (host answers): ssh: timed out"


def test_failing_prerequisite_blocks_with_its_first_line(registry):
    calls = []

    def loaded(node):
        calls.append(node)
        assert node["modules"], "nvidia not in /proc/modules\nassert []"
    registry("n.loaded", loaded)
    registry("n.version", lambda node: None, needs=["n.loaded"])
    values = {"node": {"modules": []}}
    gating.register(gating.LayerGate("node", None, "", lambda item, value: gating.Subject("h1", lambda: values)))
    req = request_for("n.version", "node")
    expected = "blocked by n.loaded (rule of n.loaded): nvidia not in /proc/modules"
    assert blocked_by(req) == expected
    assert blocked_by(req) == expected and len(calls) == 1  # judged once per target


def test_check_of_two_layers_is_gated_by_both(registry):
    registry("c.reachable", lambda cluster: None)
    registry("k.tls", lambda kf: (_ for _ in ()).throw(AssertionError("certificate does not verify")))
    registry("k.components", lambda cluster, kf: None, needs=["k.tls"])
    cluster_down = [None]
    gating.register(gating.LayerGate("cluster", "c.reachable", "API server answers",
                                 lambda item, value: gating.Subject("cluster", lambda: {"cluster": 1}, down=cluster_down[0])))
    gating.register(gating.LayerGate("kf", None, "", lambda item, value: gating.Subject("kubeflow", lambda: {"kf": 2})))
    req = request_for("k.components", "cluster", "kf")
    assert blocked_by(req) == "blocked by k.tls (rule of k.tls): certificate does not verify"
    cluster_down[0] = "connection refused"
    assert blocked_by(request_for("k.components", "cluster", "kf")) == \
        "blocked by c.reachable (API server answers): connection refused"


def test_prerequisite_that_cannot_tell_does_not_block(registry):
    from gpuconform.node.facts import CannotTell

    def unreadable(node):
        raise CannotTell("no systemd")
    registry("n.unit", unreadable)
    registry("n.upper", lambda node: None, needs=["n.unit"])
    gating.register(gating.LayerGate("node", None, "", lambda item, value: gating.Subject("h1", lambda: {"node": 1})))
    assert blocked_by(request_for("n.upper", "node")) is None


def test_no_whole_gpu_is_blocked_by_allocatable_where_the_platform_should_offer_one():
    """cluster.workload.vectoradd_gpu with no nvidia.com/gpu offered anywhere: blocked by
    cluster.mig.allocatable (which fails) when the profile's platform should offer whole GPUs (the
    device plugin gone); a skip only when the profile's platform itself offers none."""
    import tests.cluster.test_gpu_nodes  # noqa: F401 - registers cluster.mig.allocatable
    from gpuconform.cluster.gpunode import Expected
    from gpuconform.report.record import BLOCKED
    from tests.cluster.conftest import no_whole_gpu

    def expected(node):  # the type the suite's expected_mig returns
        return Expected(labels={}, allocatable=offers[node], source="the profile", why="", mig=None)
    workers = [{"metadata": {"name": "h200"}}, {"metadata": {"name": "gpu-worker-2"}}]
    offers = {"h200": {"nvidia.com/gpu": 1}, "gpu-worker-2": {"nvidia.com/mig-1g.10gb": 7}}
    why = no_whole_gpu(workers, expected)
    assert why.startswith(BLOCKED + "cluster.mig.allocatable (") and "the platform should: {'h200': 1}" in why, why
    why = no_whole_gpu(workers[1:], expected)
    assert not why.startswith(BLOCKED) and "offers no nvidia.com/gpu" in why, why
