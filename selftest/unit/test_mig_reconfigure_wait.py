"""cluster.mig.reconfigure waits, with a watch and the profile's deadline, for allocatable to
converge after mig.config.state=success: NVIDIA's MIG manager sets success as soon as it has
re-enabled the device plugin's deploy label, and the plugin republishes allocatable seconds later
(NVIDIA/mig-parted pkg/mig/reconfigure/reconfigure.go, Run). Driven through the real watch helper by
a stand-in API server that plays the MIG manager in that order."""
from __future__ import annotations

import copy
import re
import time

from gpuconform.cluster import migconfig
from gpuconform.cluster.namespace import Cleanup

NODE = "gpu-worker-1"
LAYOUTS = {"all-1g.10gb": {"nvidia.com/mig-1g.10gb": "56"},
           "all-balanced": {"nvidia.com/mig-1g.10gb": "16", "nvidia.com/mig-2g.20gb": "8",
                            "nvidia.com/mig-3g.40gb": "8"}}


def expected(config: str) -> dict[str, int]:
    return {k: int(v) for k, v in LAYOUTS[config].items()}


class MigManagerApi:
    """The node, its watch events, and a MIG manager answering each relabel with pending ->
    success (device plugin still down: no MIG allocatable) -> ``after_success`` allocatables."""

    def __init__(self, after_success):
        self.after_success = after_success
        self.rv = 1
        self.node = {"metadata": {"name": NODE, "resourceVersion": "1", "annotations": {},
                                  "labels": {"nvidia.com/mig.config": "all-1g.10gb",
                                             "nvidia.com/mig.config.state": "success"}},
                     "status": {"allocatable": {"cpu": "112", **LAYOUTS["all-1g.10gb"]}}}
        self.queue: list[dict] = []
        self.emitted: list[tuple[str, dict]] = []

    def _change(self, labels=None, allocatable=None) -> dict:
        self.rv += 1
        self.node["metadata"]["resourceVersion"] = str(self.rv)
        self.node["metadata"]["labels"].update(labels or {})
        if allocatable is not None:
            self.node["status"]["allocatable"] = {"cpu": "112", **allocatable}
        return copy.deepcopy(self.node)

    def patch(self, path, body, *, what=None):
        md = body["metadata"]
        self.node["metadata"]["annotations"].update({k: v for k, v in md["annotations"].items() if v})
        written = self._change(md["labels"])
        config = md["labels"]["nvidia.com/mig.config"]
        self.queue = [{"labels": {"nvidia.com/mig.config.state": "pending"}},
                      {"labels": {"nvidia.com/mig.config.state": "success"}, "allocatable": {}}]
        self.queue += [{"allocatable": a} for a in self.after_success(config)]
        return written

    def get_json(self, path, query=None, *, what=None, missing_ok=False):
        return copy.deepcopy(self.node)

    def request(self, method, path, query=None, body=None, *, what=None, deadline_s=None):
        return {"items": [copy.deepcopy(self.node)], "metadata": {"resourceVersion": str(self.rv)}}

    def watch(self, path, query, timeout_s):
        while self.queue:
            obj = self._change(**self.queue.pop(0))
            self.emitted.append((obj["metadata"]["labels"]["nvidia.com/mig.config.state"],
                                 dict(obj["status"]["allocatable"])))
            yield {"type": "MODIFIED", "object": obj}
        time.sleep(min(timeout_s, 0.05))  # the server ends a quiet watch


def test_allocatable_republished_after_success_passes():
    """The old check compared at the success event (allocatable none there) and failed."""
    api = MigManagerApi(lambda config: [{"nvidia.com/mig-1g.10gb": "4"}, LAYOUTS[config]])
    step = migconfig.apply(api, NODE, "all-balanced", restore_to="all-1g.10gb", timeout=10,
                           expected_allocatable=expected)
    assert step.problem is None, step.problem
    assert step.states == ["success", "pending", "success"]
    assert step.allocatable == expected("all-balanced")
    success_event = next(a for state, a in api.emitted if state == "success")
    assert success_event == {"cpu": "112"}  # what the old check saw: no MIG resources at all


def test_round_trip_waits_both_ways_and_cleans_up():
    api = MigManagerApi(lambda config: [LAYOUTS[config]])
    cleanup = Cleanup()
    steps = migconfig.round_trip(api, NODE, "all-balanced", timeout=10, cleanup=cleanup,
                                 expected_allocatable=expected)
    assert [(s.config, s.problem, s.allocatable) for s in steps] == [
        ("all-balanced", None, expected("all-balanced")), ("all-1g.10gb", None, expected("all-1g.10gb"))]
    assert len(cleanup) == 0 and api.node["metadata"]["labels"]["nvidia.com/mig.config"] == "all-1g.10gb"


def test_allocatable_never_converging_fails_with_last_seen_and_expected():
    api = MigManagerApi(lambda config: [{"nvidia.com/mig-1g.10gb": "16", "nvidia.com/mig-2g.20gb": "8"}])
    started = time.monotonic()
    step = migconfig.apply(api, NODE, "all-balanced", restore_to="all-1g.10gb", timeout=1.5,
                           expected_allocatable=expected)
    assert 1.0 < time.monotonic() - started < 5
    # the deadline is the profile's mig_reconfigure_s from the relabel: what is left of it after success
    assert re.fullmatch(re.escape(
        "after all-balanced: mig.config.state=success but allocatable did not converge to the mig-parted config: "
        "timed out after ") + r"[01]s" + re.escape(
        " waiting for gpu-worker-1 allocatable of all-balanced after nvidia.com/mig.config.state=success; last "
        "state seen: allocatable {'nvidia.com/mig-1g.10gb': 16, 'nvidia.com/mig-2g.20gb': 8}, expected "
        "{'nvidia.com/mig-1g.10gb': 16, 'nvidia.com/mig-2g.20gb': 8, 'nvidia.com/mig-3g.40gb': 8}"), step.problem)
    assert step.allocatable == {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8}


def test_failed_after_success_stops_at_once():
    api = MigManagerApi(lambda config: [])
    api_patch = api.patch

    def patch_then_fail(path, body, *, what=None):
        written = api_patch(path, body, what=what)
        api.queue.append({"labels": {"nvidia.com/mig.config.state": "failed"}})
        return written
    api.patch = patch_then_fail
    step = migconfig.apply(api, NODE, "all-balanced", restore_to="all-1g.10gb", timeout=10,
                           expected_allocatable=expected)
    assert step.problem == ("mig.config.state went to failed for all-balanced after success; "
                            "allocatable none, expected {'nvidia.com/mig-1g.10gb': 16, "
                            "'nvidia.com/mig-2g.20gb': 8, 'nvidia.com/mig-3g.40gb': 8}")
