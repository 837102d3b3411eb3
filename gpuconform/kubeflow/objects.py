"""The Kubernetes side of a Kubeflow install, read through the cluster library's connection:
workloads, the Ingress, the cert-manager issuer, profiles, cluster-admin bindings."""
from __future__ import annotations

from gpuconform.cluster.connect import Cluster

CLUSTER_ADMIN = "cluster-admin"


def workload(cluster: Cluster, namespace: str, spec: str) -> tuple[str, dict | None]:
    """(``Deployment/name`` or ``StatefulSet/name``, the object or None) for ``name`` or
    ``statefulset/name``."""
    kind, _, name = spec.rpartition("/")
    if kind.lower() == "statefulset":
        path, label = f"/apis/apps/v1/namespaces/{namespace}/statefulsets/{name}", f"StatefulSet/{name}"
    else:
        path, label = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", f"Deployment/{name}"
    return label, cluster.get_json(path, what=f"reading {label} in {namespace}", missing_ok=True)


def unavailable_reason(obj: dict | None, label: str, namespace: str) -> str | None:
    """Why a Deployment/StatefulSet is not available (None when it is)."""
    if obj is None:
        return f"{label} not found in namespace {namespace}"
    want = obj.get("spec", {}).get("replicas", 1)
    status = obj.get("status", {})
    got = status.get("availableReplicas", status.get("readyReplicas", 0)) or 0
    if label.startswith("StatefulSet/"):
        got = status.get("readyReplicas", 0) or 0
    if want and got < want:
        return f"{label} in {namespace}: {got}/{want} replicas available"
    return None


def ingress(cluster: Cluster, namespace: str, name: str) -> dict | None:
    return cluster.get_json(f"/apis/networking.k8s.io/v1/namespaces/{namespace}/ingresses/{name}",
                            what=f"reading Ingress {name} in {namespace}", missing_ok=True)


def ingress_backends(ing: dict, host: str) -> list[tuple[str, int | str]]:
    """(service, port) of every path of the rules for ``host``."""
    out = []
    for rule in ing.get("spec", {}).get("rules", []) or []:
        if rule.get("host") != host:
            continue
        for p in (rule.get("http") or {}).get("paths", []) or []:
            svc = (p.get("backend") or {}).get("service") or {}
            port = svc.get("port") or {}
            out.append((svc.get("name", "?"), port.get("number", port.get("name", "?"))))
    return out


def ingress_tls_hosts(ing: dict) -> list[str]:
    return [h for t in ing.get("spec", {}).get("tls", []) or [] for h in t.get("hosts", []) or []]


def issuer(cluster: Cluster, kind: str, name: str, namespace: str | None) -> dict | None:
    plural = "clusterissuers" if kind == "ClusterIssuer" else "issuers"
    where = f"namespaces/{namespace}/" if namespace and kind == "Issuer" else ""
    return cluster.get_json(f"/apis/cert-manager.io/v1/{where}{plural}/{name}",
                            what=f"reading cert-manager {kind} {name}", missing_ok=True)


def condition(obj: dict, kind: str) -> dict | None:
    return next((c for c in obj.get("status", {}).get("conditions", []) or [] if c.get("type") == kind), None)


def namespace(cluster: Cluster, name: str) -> dict | None:
    return cluster.get_json(f"/api/v1/namespaces/{name}", what=f"reading namespace {name}", missing_ok=True)


def profile(cluster: Cluster, name: str) -> dict | None:
    """The Kubeflow Profile (kubeflow.org/v1, cluster-scoped) of that name, None if absent."""
    return cluster.get_json(f"/apis/kubeflow.org/v1/profiles/{name}", what=f"reading Profile {name}",
                            missing_ok=True)


def subject_key(s: dict) -> str:
    """``Kind:name`` (``Kind:namespace:name`` for a ServiceAccount), as the profile lists them."""
    if s.get("kind") == "ServiceAccount":
        return f"ServiceAccount:{s.get('namespace', '')}:{s.get('name', '')}"
    return f"{s.get('kind')}:{s.get('name')}"


def cluster_admin_subjects(cluster: Cluster) -> dict[str, list[str]]:
    """Subject -> names of the ClusterRoleBindings granting it ClusterRole cluster-admin."""
    items = cluster.get_json("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
                             what="listing ClusterRoleBindings").get("items", [])
    out: dict[str, list[str]] = {}
    for b in items:
        ref = b.get("roleRef", {})
        if ref.get("kind") == "ClusterRole" and ref.get("name") == CLUSTER_ADMIN:
            for s in b.get("subjects") or []:
                out.setdefault(subject_key(s), []).append(b["metadata"]["name"])
    return out
