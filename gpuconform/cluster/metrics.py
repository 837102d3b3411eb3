"""A metrics endpoint of the platform (dcgm-exporter by default), read once: directly by URL, or
through the API server's service proxy (``services/<name>:<port>/proxy/<path>``), which reaches a
ClusterIP Service from outside the cluster with the suite's own credentials."""
from __future__ import annotations

import dataclasses
import urllib.error
import urllib.request

from gpuconform.cluster.connect import Cluster
from gpuconform.cluster.errors import ClusterError, Forbidden


@dataclasses.dataclass(frozen=True)
class Scrape:
    where: str
    text: str = ""
    problem: str | None = None  #: why the endpoint served nothing (a failure of the platform)


def proxy_path(namespace: str, service: str, port: int, path: str) -> str:
    return f"/api/v1/namespaces/{namespace}/services/{service}:{port}/proxy/{path.lstrip('/')}"


def scrape(cluster: Cluster, *, url: str | None, proxy: str, timeout: float) -> Scrape:
    """One scrape of ``url``, else of the API server path ``proxy``. No right to use the service
    proxy raises Forbidden (could not check); an endpoint that does not answer 200 (the API server's
    503 for a Service without ready endpoints, or the endpoint's own refusal) is a problem."""
    if url is None:
        try:
            return Scrape(proxy, cluster.request("GET", proxy, what=f"scraping {proxy}", text=True))
        except Forbidden as exc:
            if exc.by_rbac:
                raise
            return Scrape(proxy, problem=str(exc))  # the endpoint's own 403, passed on by the proxy
        except ClusterError as exc:
            return Scrape(proxy, problem=str(exc))
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - the profile's http(s) URL
            return Scrape(url, resp.read(16 << 20).decode("utf-8", "replace"))
    except (urllib.error.URLError, OSError) as exc:
        return Scrape(url, problem=str(getattr(exc, "reason", exc)))
