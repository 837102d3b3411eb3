"""Host by host: each host's node checks run together, in the order the hosts were given, and under
``-n N`` every check of one host goes to one worker, so each host is probed once
(gpuconform/plugin/distribution.py). The hosts here refuse connections (loopback, port 9): the
probe ends at once and the run shows where each item ran."""
import re

from runner import run_suite

# 127.0.0.1 is a prefix of 127.0.0.10 and 127.0.0.11: a host must not be taken for another
HOSTS = ["ssh://root@127.0.0.11:9", "ssh://root@127.0.0.1:9", "ssh://root@127.0.0.10:9"]
ITEM = re.compile(r"^(?:\[(gw\d+)\] \[\s*\d+%\] \w+ )?(tests/node/\S+\[([^\]]*)\])", re.M)


def host_of(params: str) -> str:
    """The host in an item's parameters (``...-ssh://127.0.0.10``)."""
    return re.search(r"ssh://[\d.]+$", params).group(0)


def test_items_run_host_by_host_in_the_given_order(tmp_path):
    proc, _ = run_suite("-m", "node", f"--hosts={','.join(HOSTS)}", "--collect-only", "-q",
                        report_dir=tmp_path)
    hosts = [host_of(m.group(3)) for m in ITEM.finditer(proc.stdout)]
    assert len(hosts) > 3 * 30, proc.stdout[-2000:]
    runs = [h for i, h in enumerate(hosts) if i == 0 or hosts[i - 1] != h]
    assert runs == ["ssh://127.0.0.11", "ssh://127.0.0.1", "ssh://127.0.0.10"], runs


def test_xdist_gives_each_host_to_one_worker(tmp_path):
    proc, results = run_suite("-m", "node", f"--hosts={','.join(HOSTS)}", "-n", "2", "-v",
                              report_dir=tmp_path, timeout=300)
    assert "scheduling tests via HostScheduling" in proc.stdout, proc.stdout[-2000:]
    workers: dict[str, set[str]] = {}
    for m in ITEM.finditer(proc.stdout):
        if m.group(1):
            workers.setdefault(host_of(m.group(3)), set()).add(m.group(1))
    assert sorted(workers) == sorted(h.replace("root@", "").removesuffix(":9") for h in HOSTS), workers
    assert all(len(w) == 1 for w in workers.values()), workers
    assert len(set().union(*workers.values())) == 2, workers  # both workers had hosts
    reachable = [r for r in results["results"] if r["check_id"] == "node.reachable"]
    assert sorted(r["verdict"] for r in reachable) == ["fail"] * 3, reachable
