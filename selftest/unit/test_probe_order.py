"""The pool probes hosts in the order they were submitted (the order their checks run in), at most
``workers`` at once: the first hosts' checks start while the last hosts are still being probed,
instead of every host waiting on the whole fleet (gpuconform/node/collect.py)."""
import threading
import time
from types import SimpleNamespace

from gpuconform.node.collect import FactsPool


class Fleet:
    """Hosts that record when their probe starts and how many run at once."""

    def __init__(self):
        self.lock = threading.Lock()
        self.started: list[str] = []
        self.running = self.peak = 0

    def host(self, name: str):
        fleet = self

        class Host:
            backend = SimpleNamespace(get_hostname=lambda: name)

            def run(self, script):
                with fleet.lock:
                    fleet.started.append(name)
                    fleet.running += 1
                    fleet.peak = max(fleet.peak, fleet.running)
                time.sleep(0.02)
                with fleet.lock:
                    fleet.running -= 1
                return SimpleNamespace(stdout="", stderr="", rc=0)
        return Host()


def test_hosts_are_probed_in_submission_order_a_few_at_once():
    fleet, names = Fleet(), [f"gpu-{i:02d}" for i in range(24)]
    pool = FactsPool(lambda token, deadline_s, host="": "true", timeout_s=10, workers=3)
    hosts = [fleet.host(name) for name in names]
    pool.submit(hosts)
    first = pool.get(hosts[0])
    assert len(fleet.started) < len(names), "the first host's facts waited for the whole fleet"
    for host in hosts:
        pool.get(host)
    assert pool.close() == []
    assert first.error  # these hosts print no probe output: an error, not facts
    assert sorted(fleet.started) == names
    # three workers take from one queue: a host starts at most two places from its turn
    assert all(abs(fleet.started.index(n) - i) < 3 for i, n in enumerate(names)), fleet.started
    assert fleet.peak == 3
