"""The one probe-pool contract (gpuconform/node/pool.py): the run's pool hands each host to the
pool of its kind, makes only the pools its hosts need and closes them once; a re-probe (after
``--remediate=apply``) is a fresh probe held to the same deadline as the first, on either pool."""
import threading
import time
from types import SimpleNamespace

from gpuconform.node import k8s_node
from gpuconform.node.collect import FactsPool
from gpuconform.node.facts import NodeFacts
from gpuconform.node.k8s_node.pods import ProbePods
from gpuconform.node.pool import ByKind


def _host(name: str, kind: str = "ssh", run=None):
    return SimpleNamespace(backend=SimpleNamespace(get_hostname=lambda: name, get_connection_type=lambda: kind),
                           run=run)


class Recording:
    """A pool that records what it was asked."""

    def __init__(self, name: str, asked: list):
        self.name, self.asked, self.deadline_s = name, asked, 1

    def submit(self, hosts):
        self.asked.append((self.name, "submit", [h.backend.get_hostname() for h in hosts]))

    def get(self, host):
        self.asked.append((self.name, "get", host.backend.get_hostname()))
        return NodeFacts(host.backend.get_hostname(), {})

    def reprobe(self, host):
        self.asked.append((self.name, "reprobe", host.backend.get_hostname()))
        return NodeFacts(host.backend.get_hostname(), {})

    def close(self):
        self.asked.append((self.name, "close"))
        return [f"{self.name} closed"]


def test_each_host_goes_to_the_pool_of_its_kind_made_once_closed_once():
    asked, made = [], []

    def maker(name):
        return lambda: made.append(name) or Recording(name, asked)

    pool = ByKind({k8s_node.SCHEME: maker("pods")}, maker("ssh"), deadline_s=1)
    a, b, n = _host("a", "ssh"), _host("b", "local"), _host("n", k8s_node.SCHEME)
    pool.submit([a, n, b])
    pool.get(n)
    pool.reprobe(b)
    assert made == ["ssh", "pods"]
    assert asked == [("ssh", "submit", ["a", "b"]), ("pods", "submit", ["n"]), ("pods", "get", "n"),
                     ("ssh", "reprobe", "b")]
    assert pool.close() == ["ssh closed", "pods closed"]
    assert pool.close() == [] and asked.count(("ssh", "close")) == 1


def test_no_pool_is_made_for_a_kind_without_hosts():
    pool = ByKind({k8s_node.SCHEME: lambda: (_ for _ in ()).throw(AssertionError("made"))},
                  lambda: Recording("ssh", []), deadline_s=1)
    pool.submit([_host("a")])
    assert pool.close() == ["ssh closed"]


def test_a_reprobe_is_a_fresh_probe_under_the_same_deadline():
    runs, release = [], threading.Event()

    def run(script):
        runs.append(script)
        if len(runs) == 2:  # the re-probe hangs (the fix left the host stuck)
            release.wait(30)
        return SimpleNamespace(stdout="", stderr="", rc=0)

    host = _host("gpu-1", run=run)
    pool = FactsPool(lambda token, deadline_s, host="": f"probe {token}", timeout_s=1, workers=2)
    first = pool.get(host)
    assert pool.get(host) is first and len(runs) == 1  # once per run
    started = time.monotonic()
    again = pool.reprobe(host)
    took = time.monotonic() - started
    release.set()
    assert len(runs) == 2 and runs[0] != runs[1]  # its own token
    assert "did not finish within 1 s (profile timeouts.probe_s)" in again.error, again.error
    assert 0.9 <= took < 3, took
    assert pool.get(host) is again  # the host's facts are now the re-probe's
    pool.close()


def test_a_pod_reprobe_is_a_new_pod_of_its_own():
    settings = k8s_node.Settings(image="probe", image_pull_policy="IfNotPresent", start_s=5, probe_s=5,
                                 api_s=1.0, parallel=4)
    probes = ProbePods(lambda: None, settings, lambda token, deadline, host="": f"probe {token}")
    batches = []

    def run_batch(batch, labels):
        batches.append([(p.name, p.script) for p in batch])
        for pod in batch:
            probes._settle(pod, NodeFacts(pod.node, {}, f"from {pod.name}"))

    probes._run_batch = run_batch
    host = _host("gpu-worker-1", k8s_node.SCHEME)
    assert probes.get(host).error == "from probe-gpu-worker-1"
    assert probes.reprobe(host).error == "from probe-gpu-worker-1-1"
    assert len(batches) == 2 and batches[0][0][1] != batches[1][0][1]  # a token of its own
    assert probes.get(host).error == "from probe-gpu-worker-1-1"


def test_the_host_list_tells_a_selector_from_a_node():
    """The run's host list knows, without the API server, whether it holds k8s-node selectors
    (plugin/hosts.py asks the API server only then)."""
    from gpuconform.plugin.inputs import HostList
    assert HostList(("k8s-node://?selector=nvidia.com/gpu.present=true",), "--hosts", None).selectors
    assert not HostList(("k8s-node://h200", "ssh://root@10.0.0.1"), "--hosts", None).selectors
