"""k8s-node:// probe pods: a batch goes on after its last pod has settled (it deletes its pods in
one request), so the run's checks can end before it does. Closing waits for it, within a bound:
what the batch could not delete is said, and the namespace goes after its pods.

Seen in CI: without RBAC's ``deletecollection pods`` node.reachable passed, the run ended, the
namespace was deleted, and only then was the forbidden delete answered: its line was lost."""
import threading
import time

import testinfra

from gpuconform.node import k8s_node
from gpuconform.node.facts import NodeFacts
from gpuconform.node.k8s_node.pods import ProbePods

k8s_node.register_backend()
WORKER = testinfra.get_host("k8s-node://gpu-worker-1")
SETTINGS = k8s_node.Settings(image="probe", image_pull_policy="IfNotPresent", start_s=5, probe_s=5,
                             api_s=1.0, parallel=4)


def _pods(batch_takes: float, order: list[str], settle: bool = True) -> ProbePods:
    probes = ProbePods(lambda: None, SETTINGS, lambda token, deadline, host="": "true")
    probes.cleanup.add("namespace", lambda: order.append("namespace deleted"))

    def run_batch(batch, labels):
        for pod in batch if settle else ():
            probes._settle(pod, NodeFacts(pod.node, {}))
        time.sleep(batch_takes)  # the collection delete, after the pods settled (or a long watch)
        order.append("pods deleted")
        probes.cleanup.errors.append("probe pods in ns: forbidden: needs deletecollection pods")

    probes._run_batch = run_batch
    return probes


def test_close_waits_for_the_batch_and_keeps_what_it_could_not_do():
    order: list[str] = []
    probes = _pods(0.3, order)
    assert probes.get(WORKER).host == "gpu-worker-1"  # settled: the check can end now
    summary = probes.close()
    assert order == ["pods deleted", "namespace deleted"]
    assert summary[1:] == ["cleanup: probe pods in ns: forbidden: needs deletecollection pods"], summary


def test_close_does_not_wait_past_its_bound_for_a_batch_that_hangs():
    order: list[str] = []
    probes = _pods(30, order)
    probes.get(WORKER)
    started = time.monotonic()
    probes.close()
    took = time.monotonic() - started
    assert order == ["namespace deleted"], order
    assert 1.5 <= took < 5, took  # 2 x api_s
    assert any(t.is_alive() for t in threading.enumerate() if t.name.startswith("probe pods"))


def test_close_does_not_wait_for_a_batch_still_watching():
    """Ctrl-C while pods are still being followed: the namespace's deletion takes them, now."""
    order: list[str] = []
    probes = _pods(30, order, settle=False)
    probes.submit([WORKER])
    started = time.monotonic()
    probes.close()
    assert order == ["namespace deleted"] and time.monotonic() - started < 0.5
