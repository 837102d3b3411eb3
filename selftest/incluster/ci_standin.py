"""A stand-in for the two CI platforms' artifact stores, as far as ci/fetch-baseline.py asks
them, on loopback over HTTP. It follows the platforms' published API, not the script:

* GitLab (docs.gitlab.com/ee/api/job_artifacts.html, "Download a single artifact file from
  specific tag or branch"): ``GET /api/v4/projects/:id/jobs/artifacts/:ref_name/raw/*path?job=``
  serves the file from that job of the ref's latest *successful* pipeline; 404
  ``{"message": "404 Not found"}`` when there is none; 401 without JOB-TOKEN / PRIVATE-TOKEN.
* GitHub (docs.github.com/en/rest/actions/workflow-runs, /actions/artifacts):
  ``GET /repos/{o}/{r}/actions/workflows/{file}/runs?status=success&branch=&per_page=`` newest
  first; ``GET /repos/{o}/{r}/actions/runs/{id}/artifacts?name=``; ``GET
  /repos/{o}/{r}/actions/artifacts/{id}/zip`` answers 302 to a short-lived storage URL that
  needs no token; 401 without ``Authorization: Bearer``.

The selftest records each night's job as a pipeline / workflow run with its status and the
artifacts the template keeps, as the platform would.
"""
from __future__ import annotations

import io
import json
import threading
import urllib.parse
import zipfile
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Run:
    """One pipeline (GitLab) or workflow run (GitHub) of the nightly job."""
    id: int
    ref: str
    job: str
    success: bool
    files: dict[str, bytes] = field(default_factory=dict)   # GitLab: artifact path -> content
    artifacts: dict[str, dict[str, bytes]] = field(default_factory=dict)  # GitHub: name -> {file: content}


class Store:
    def __init__(self) -> None:
        self.runs: list[Run] = []
        self.requests: list[tuple[str, dict[str, str]]] = []

    def add(self, **kw) -> Run:
        run = Run(id=1000 + len(self.runs), **kw)
        self.runs.append(run)
        return run


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def serve(store: Store, workflow_file: str) -> tuple[ThreadingHTTPServer, str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, code: int, body: bytes | dict, ctype: str = "application/json", headers=()) -> None:
            data = json.dumps(body).encode() if isinstance(body, dict) else body
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            for k, v in headers:
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urllib.parse.urlsplit(self.path)
            query = dict(urllib.parse.parse_qsl(url.query))
            parts = [urllib.parse.unquote(p) for p in url.path.strip("/").split("/")]
            store.requests.append((url.path, {k.lower(): v for k, v in self.headers.items()}))
            if parts[:1] == ["storage"]:  # pre-signed: a second credential is refused
                if any(k.lower() in ("authorization", "private-token", "job-token") for k in self.headers):
                    return self._send(400, {"message": "only one authentication mechanism allowed"})
                run_id, name = int(parts[1]), parts[2].removesuffix(".zip")
                run = next(r for r in store.runs if r.id == run_id)
                return self._send(200, _zip(run.artifacts[name]), "application/zip")
            if parts[:2] == ["api", "v4"]:
                return self._gitlab(parts[2:], query)
            if parts[:1] == ["repos"]:
                return self._github(parts[3:], query)
            return self._send(404, {"message": "Not Found"})

        def _gitlab(self, parts: list[str], query: dict) -> None:
            if not (self.headers.get("JOB-TOKEN") or self.headers.get("PRIVATE-TOKEN")):
                return self._send(401, {"message": "401 Unauthorized"})
            # projects/:id/jobs/artifacts/:ref/raw/<path...>
            if len(parts) < 7 or parts[0] != "projects" or parts[2:4] != ["jobs", "artifacts"] or parts[5] != "raw":
                return self._send(404, {"message": "404 Not found"})
            ref, path = parts[4], "/".join(parts[6:])
            latest = next((r for r in reversed(store.runs) if r.ref == ref and r.success), None)
            if latest is None or latest.job != query.get("job") or path not in latest.files:
                return self._send(404, {"message": "404 Not found"})
            return self._send(200, latest.files[path], "application/octet-stream")

        def _github(self, parts: list[str], query: dict) -> None:
            if not self.headers.get("Authorization", "").startswith("Bearer "):
                return self._send(401, {"message": "Requires authentication"})
            if parts[:2] == ["actions", "workflows"] and parts[2] == workflow_file and parts[3:] == ["runs"]:
                runs = [r for r in reversed(store.runs)
                        if (query.get("status") != "success" or r.success) and r.ref == query.get("branch", r.ref)]
                shown = runs[: int(query.get("per_page", 30))]
                return self._send(200, {"total_count": len(runs), "workflow_runs": [
                    {"id": r.id, "head_branch": r.ref, "status": "completed",
                     "conclusion": "success" if r.success else "failure"} for r in shown]})
            if parts[:2] == ["actions", "runs"] and parts[3:] == ["artifacts"]:
                run = next((r for r in store.runs if r.id == int(parts[2])), None)
                names = [n for n in (run.artifacts if run else {}) if n == query.get("name", n)]
                return self._send(200, {"total_count": len(names), "artifacts": [
                    {"id": run.id * 10 + i, "name": n, "expired": False,
                     "archive_download_url": f"{base}/repos/o/r/actions/artifacts/{run.id}:{n}/zip"}
                    for i, n in enumerate(names)]})
            if parts[:2] == ["actions", "artifacts"] and parts[3:] == ["zip"]:
                run_id, name = parts[2].split(":", 1)
                return self._send(302, b"", headers=[("Location", f"{base}/storage/{run_id}/{name}.zip")])
            return self._send(404, {"message": "Not Found"})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    base = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, base
