"""Issue 28, finding 5: every wait on the API server's side ends by ``cluster.timeouts.api_s``,
once: an exec credential plugin that never answers, an API server that died mid-run."""
from __future__ import annotations

import threading
import time

import pytest

from gpuconform.cluster import connect
from gpuconform.cluster.errors import Unreachable
from testbed.ports import free_port  # a port nothing listens on


def _kubeconfig(tmp_path, user: str) -> str:
    path = tmp_path / "kubeconfig"
    path.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "https://127.0.0.1:{free_port()}", insecure-skip-tls-verify: true}}}}]
users: [{{name: u, user: {user}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
""")
    return str(path)


def _within(seconds: float, fn):
    """``fn()``'s result or exception, or a failure when it has not returned in ``seconds``."""
    out: dict = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc
    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still waiting after {seconds} s"
    return out


def test_exec_plugin_that_never_answers_is_bounded_by_api_s(tmp_path):
    plugin = tmp_path / "plugin.sh"
    plugin.write_text("#!/bin/sh\nexec sleep 600\n")
    plugin.chmod(0o755)
    kc = _kubeconfig(tmp_path, f"{{exec: {{apiVersion: client.authentication.k8s.io/v1, command: {plugin}}}}}")
    t0 = time.monotonic()
    out = _within(20, lambda: connect.connect(kc, timeout=1.5))
    assert isinstance(out.get("error"), Unreachable), out
    assert "did not answer within 1.5 s (cluster.timeouts.api_s)" in str(out["error"])
    assert time.monotonic() - t0 < 10
    assert "exec sleep 600" in plugin.read_text() and "timeout" not in open(kc).read()  # never written back


def test_a_dead_api_server_costs_one_api_s_not_one_per_check(tmp_path):
    cluster = connect.connect(_kubeconfig(tmp_path, "{token: abc}"), timeout=1.5)
    t0 = time.monotonic()
    with pytest.raises(Unreachable, match="unreachable"):
        cluster.get_json("/api/v1/nodes")
    first = time.monotonic() - t0
    later = []
    for path in ("/api/v1/pods", "/apis/apps/v1/daemonsets", "/version"):
        t0 = time.monotonic()
        with pytest.raises(Unreachable, match="given up for the run"):
            cluster.get_json(path)
        later.append(time.monotonic() - t0)
    assert first >= 1.5 and max(later) < 0.3, (first, later)
