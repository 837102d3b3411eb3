"""``k8s-node://`` host specs: ``k8s-node://<node>`` and ``k8s-node://?selector=<label selector>``;
checking one, and resolving the selectors against the API server (:func:`resolve`, the one place
that asks it which nodes a selector names)."""
from __future__ import annotations

import dataclasses
import re
import urllib.parse
from typing import Any, Callable

SCHEME = "k8s-node"
#: the host name a selector that could not be expanded keeps (its facts carry the reason)
SELECTOR_HOST = "selector="
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_spec(spec: str) -> str | None:
    """Why ``spec`` (a ``k8s-node://`` host spec) is not valid, or None."""
    url = urllib.parse.urlsplit(spec)
    query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
    if url.path not in ("", "/"):
        return "a node name has no '/' (a selector is written k8s-node://?selector=KEY=VALUE)"
    if url.netloc:
        if query:
            return "a node name takes no ?options (k8s-node://NODE or k8s-node://?selector=...)"
        if not (_DNS_SUBDOMAIN.match(url.netloc) and len(url.netloc) <= 253):
            return f"{url.netloc!r} is not a Kubernetes node name (lower-case DNS subdomain)"
        return None
    if set(query) != {"selector"} or len(query["selector"]) != 1 or not query["selector"][0].strip():
        return ("no node: name one (k8s-node://gpu-worker-1) or select by label "
                "(k8s-node://?selector=nvidia.com/gpu.present=true; write a comma inside it as %2C)")
    return None


def selector_of(spec: str) -> str | None:
    if not spec.startswith(f"{SCHEME}://?"):
        return None
    return urllib.parse.parse_qs(urllib.parse.urlsplit(spec).query)["selector"][0].strip()


@dataclasses.dataclass(frozen=True)
class Resolved:
    """Host specs with every selector replaced by its nodes, and the hosts that stand for a
    selector that could not be: host name (``selector=S``) -> why (its probe's error)."""
    hosts: list[str]
    unresolved: dict[str, str]


def resolve(specs: list[str], connect: Callable[[], Any]) -> Resolved:
    """``specs`` with every ``k8s-node://?selector=S`` replaced by one ``k8s-node://<node>`` per
    node the API server lists for ``S`` (one list request per selector; none without a selector).
    A selector the server cannot answer, or that matches no node, stays as one host
    (``selector=S``) whose probe is an error saying why: the run reports it instead of silently
    checking nothing."""
    out: list[str] = []
    unresolved: dict[str, str] = {}
    cluster = None
    for spec in specs:
        selector = selector_of(spec)
        if selector is None:
            out.append(spec)
            continue
        why = None
        try:
            cluster = cluster or connect()
            names = sorted(n["metadata"]["name"] for n in cluster.list_items(
                "/api/v1/nodes", {"labelSelector": selector}, what=f"listing the nodes of selector {selector}"))
        except Exception as exc:  # noqa: BLE001 - ClusterError, or no kubernetes config at all
            names, why = [], f"cannot list the nodes of selector {selector!r}: {exc}"
        if not names:
            host = SELECTOR_HOST + selector
            unresolved[host] = why or f"no node matches selector {selector!r}"
            out.append(f"{SCHEME}://" + urllib.parse.quote(host, safe="=."))
        out += [f"{SCHEME}://{name}" for name in names if f"{SCHEME}://{name}" not in out]
    return Resolved(out, unresolved)
