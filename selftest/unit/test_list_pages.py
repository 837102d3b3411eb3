"""Issue #27: a list of thousands of objects is read a page at a time (``limit``/``continue``),
each object without ``metadata.managedFields``; a continue token that expires mid-list (410 Gone)
restarts the list once, twice is an error naming the list. The stand-in server answers as the
API server does (k8s.io/apiserver: ``metadata.continue`` empty on the last page, 410 with reason
Expired for a token past compaction); the real server's paging is proven in
selftest/cluster_checks/test_connection.py."""
from __future__ import annotations

import http.server
import json
import threading
import urllib.parse

import pytest

from gpuconform.cluster import connect
from gpuconform.cluster.errors import ClusterError

NODES = [{"metadata": {"name": f"gpu-{i}", "labels": {"role": "gpu"},
                       "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]}} for i in range(7)]


class Server(http.server.ThreadingHTTPServer):
    def __init__(self, expire: int):
        self.expire = expire  # how many continue tokens to refuse as expired
        self.queries: list[dict] = []
        super().__init__(("127.0.0.1", 0), Handler)


class Handler(http.server.BaseHTTPRequestHandler):
    server: Server

    def log_message(self, *args):
        pass

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        self.server.queries.append(query)
        if query.get("continue") and self.server.expire:
            self.server.expire -= 1
            return self._answer(410, {"kind": "Status", "status": "Failure", "reason": "Expired", "code": 410,
                                      "message": "The provided continue parameter is too old"})
        start, limit = int(query.get("continue") or 0), int(query["limit"])
        end = start + limit
        token = str(end) if end < len(NODES) else ""
        self._answer(200, {"kind": "NodeList", "metadata": {"resourceVersion": "9", "continue": token},
                           "items": NODES[start:end]})

    def _answer(self, code: int, doc: dict) -> None:
        body = json.dumps(doc).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def serve(tmp_path, monkeypatch):
    monkeypatch.setattr(connect, "LIST_PAGE", 3)
    servers = []

    def start(expire: int = 0):
        server = Server(expire)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        kc = tmp_path / "kubeconfig"
        kc.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{server.server_address[1]}"}}}}]
users: [{{name: u, user: {{token: abc}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
current-context: c
""")
        return server, connect.connect(str(kc), timeout=5)
    yield start
    for server in servers:
        server.shutdown()


def test_pages_read_in_order_without_managed_fields(serve):
    server, cluster = serve()
    items = cluster.list_items("/api/v1/nodes", {"labelSelector": "role=gpu"})
    assert [n["metadata"]["name"] for n in items] == [f"gpu-{i}" for i in range(7)]
    assert not any("managedFields" in n["metadata"] for n in items)
    assert [q.get("continue") for q in server.queries] == [None, "3", "6"]
    assert all(q["limit"] == "3" and q["labelSelector"] == "role=gpu" for q in server.queries)


def test_expired_continue_token_restarts_the_list_once(serve):
    server, cluster = serve(expire=1)
    items = cluster.list_items("/api/v1/nodes")
    assert [n["metadata"]["name"] for n in items] == [f"gpu-{i}" for i in range(7)]  # no page twice
    assert [q.get("continue") for q in server.queries] == [None, "3", None, "3", "6"]


def test_token_expiring_again_is_an_error_naming_the_list(serve):
    server, cluster = serve(expire=2)
    with pytest.raises(ClusterError, match="listing GPU nodes: the list's continue token expired twice"):
        cluster.list_items("/api/v1/nodes", what="listing GPU nodes")
    assert [q.get("continue") for q in server.queries] == [None, "3", None, "3"]
