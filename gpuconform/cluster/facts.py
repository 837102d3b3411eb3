"""A read-only snapshot of the cluster for the checks: one list call per kind, made on first
use and kept for the run, so a 1,000-node cluster costs a handful of requests.

Objects are plain JSON dicts as the API server sends them (typed models are slow on thousands
of nodes). A read that fails is remembered and raised again, never retried per check.
"""
from __future__ import annotations

from gpuconform.cluster import operator
from gpuconform.cluster.connect import Cluster, wait_reachable
from gpuconform.cluster.errors import ClusterError
from gpuconform.mig import parted
from gpuconform.once import Once, once

MIG_PARTED_KEY = "config.yaml"
VALIDATOR_APPS = (operator.VALIDATOR_DAEMONSET, *operator.WORKLOAD_VALIDATORS.values())


class ClusterFacts:
    def __init__(self, cluster: Cluster, *, gpu_selector: str, operator_namespace: str,
                 connect_timeout: float):
        self.cluster = cluster
        self.gpu_selector = gpu_selector
        self.operator_namespace = operator_namespace
        self.connect_timeout = connect_timeout
        self._once = Once(ClusterError)

    def derived(self, key: tuple, compute):
        """A value computed from this snapshot alone (e.g. the MIG layout thousands of nodes
        share), computed once; a ClusterError it raises is kept and raised again."""
        return self._once.get(("derived", *key), compute)

    # -- the API server ---------------------------------------------------------------------
    @once
    def version(self) -> dict:
        """``/version``; the first contact, retried up to the connect timeout."""
        return wait_reachable(self.cluster, self.connect_timeout)

    @property
    def unreachable(self) -> str | None:
        """Why the API server cannot be used (one line), or None."""
        try:
            self.version()
        except ClusterError as exc:
            return str(exc)
        return None

    @once
    def api_groups(self) -> frozenset[str]:
        doc = self.cluster.get_json("/apis", what="discovering API groups")
        return frozenset(g["name"] for g in doc.get("groups", []))

    # -- nodes ------------------------------------------------------------------------------
    @once
    def gpu_nodes(self) -> tuple[dict, ...]:
        """Nodes matching the profile's GPU worker selector, sorted by name."""
        items = self.cluster.list_items("/api/v1/nodes", {"labelSelector": self.gpu_selector},
                                        what=f"listing nodes {self.gpu_selector}")
        return tuple(sorted(items, key=lambda n: n["metadata"]["name"]))

    def gpu_node_names(self) -> list[str]:
        return [n["metadata"]["name"] for n in self.gpu_nodes()]

    @once
    def _nodes_by_name(self) -> dict[str, dict]:
        return {n["metadata"]["name"]: n for n in self.gpu_nodes()}

    def node(self, name: str) -> dict:
        node = self._nodes_by_name().get(name)
        if node is None:
            raise ClusterError(f"node {name} is not among the GPU workers ({self.gpu_selector})")
        return node

    # -- GPU Operator -----------------------------------------------------------------------
    @once
    def operator_namespace_object(self) -> dict | None:
        return self.cluster.get_json(f"/api/v1/namespaces/{self.operator_namespace}", missing_ok=True,
                                     what=f"reading namespace {self.operator_namespace}")

    @once
    def cluster_policies(self) -> tuple[dict, ...] | None:
        """ClusterPolicies (nvidia.com/v1), or None when the CRD is not installed."""
        doc = self.cluster.get_json("/apis/nvidia.com/v1/clusterpolicies", missing_ok=True,
                                    what="listing GPU Operator ClusterPolicies")
        return None if doc is None else tuple(doc.get("items", []))

    def cluster_policy(self, name: str) -> dict | None:
        """The ClusterPolicy ``name``, or None (also when the CRD is not installed)."""
        return next((p for p in self.cluster_policies() or () if p["metadata"]["name"] == name), None)

    @once
    def mig_parted_configs(self, configmap: str) -> dict[str, tuple[parted.Entry, ...]]:
        """The named configs of mig-parted's ConfigMap ``configmap`` in the operator's namespace,
        key ``config.yaml`` (the file the MIG manager reads: gpu-operator
        assets/state-mig-manager/0600_daemonset.yaml, MIG_PARTED_CONFIG_FILE). Missing or not a
        config mig-parted accepts: ClusterError (could not check), never a fallback."""
        where = f"ConfigMap {self.operator_namespace}/{configmap}"
        cm = self.cluster.get_json(f"/api/v1/namespaces/{self.operator_namespace}/configmaps/{configmap}",
                                   missing_ok=True, what=f"reading {where}")
        if cm is None:
            raise ClusterError(f"{where} (mig-parted config, ClusterPolicy spec.migManager.config.name) not found")
        text = (cm.get("data") or {}).get(MIG_PARTED_KEY)
        if text is None:
            keys = ", ".join(cm.get("data") or {}) or "none"
            raise ClusterError(f"{where} has no key {MIG_PARTED_KEY} (keys: {keys})")
        try:
            return parted.parse(text)
        except parted.MigPartedError as exc:
            raise ClusterError(f"{where} key {MIG_PARTED_KEY}: {exc}") from None

    @once
    def configmap_data(self, namespace: str, name: str) -> dict[str, str] | None:
        """The ``data`` of ConfigMap ``namespace/name`` ({} when it has none), None when it does not exist."""
        cm = self.cluster.get_json(f"/api/v1/namespaces/{namespace}/configmaps/{name}", missing_ok=True,
                                   what=f"reading ConfigMap {namespace}/{name}")
        return None if cm is None else dict(cm.get("data") or {})

    @once
    def daemonsets(self) -> tuple[dict, ...]:
        doc = self.cluster.get_json(f"/apis/apps/v1/namespaces/{self.operator_namespace}/daemonsets",
                                    what=f"listing DaemonSets in {self.operator_namespace}")
        return tuple(doc.get("items", []))

    def daemonset(self, name: str) -> dict | None:
        return next((d for d in self.daemonsets() if d["metadata"]["name"] == name), None)

    @once
    def validator_pods(self) -> tuple[dict, ...]:
        return tuple(self.cluster.list_items(f"/api/v1/namespaces/{self.operator_namespace}/pods",
                                             {"labelSelector": f"app in ({','.join(VALIDATOR_APPS)})"},
                                             what=f"listing validator pods in {self.operator_namespace}"))

    @once
    def pods_of(self, label_selector: str) -> tuple[dict, ...]:
        """Pods of one operand (read only when its DaemonSet is short, to name the nodes)."""
        return tuple(self.cluster.list_items(f"/api/v1/namespaces/{self.operator_namespace}/pods",
                                             {"labelSelector": label_selector},
                                             what=f"listing pods {label_selector} in {self.operator_namespace}"))

    def operator_version(self) -> str | None:
        """The GPU Operator release, from its validator's image tag (``gpu-operator:v25.10.0``)."""
        try:
            ds = self.daemonset(operator.VALIDATOR_DAEMONSET)
        except ClusterError:
            return None
        containers = ((((ds or {}).get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
        image = containers[0].get("image", "") if containers else ""
        return image.rsplit(":", 1)[1] if "/gpu-operator:" in image else None

    # -- Kyverno ----------------------------------------------------------------------------
    def kyverno_installed(self) -> bool:
        return "kyverno.io" in self.api_groups()

    @once
    def kyverno_policies(self) -> tuple[dict, ...]:
        """Kyverno ClusterPolicies, and the namespaced Policies of the operator's namespace."""
        cluster_wide = self.cluster.get_json("/apis/kyverno.io/v1/clusterpolicies", missing_ok=True,
                                             what="listing Kyverno ClusterPolicies") or {}
        namespaced = self.cluster.get_json(f"/apis/kyverno.io/v1/namespaces/{self.operator_namespace}/policies",
                                           missing_ok=True, what="listing Kyverno Policies") or {}
        return tuple(cluster_wide.get("items", [])) + tuple(namespaced.get("items", []))

    @once
    def kyverno_resource_filters(self) -> str:
        """The ``resourceFilters`` of Kyverno's ConfigMap (``kyverno/kyverno``), '' if unreadable."""
        cm = self.cluster.get_json("/api/v1/namespaces/kyverno/configmaps/kyverno", missing_ok=True,
                                   what="reading Kyverno's ConfigMap")
        return ((cm or {}).get("data") or {}).get("resourceFilters", "")
