"""The Kubernetes side of a Kubeflow 1.10 install, created in the control-plane test bed
(testbed/cluster) through the API: namespaces, the install's Deployments/StatefulSets (KWOK
runs their pods on the control-plane nodes), the Ingress `ingress-kubeflow`, the Profile and
cert-manager ClusterIssuer CRDs (written for this project) with their objects, and the
profiles controller's cluster-admin binding. Faults: an extra cluster-admin binding, an issuer
that is not Ready, a deleted component, an Ingress routing elsewhere without TLS.
"""
from __future__ import annotations

from kubernetes import client
from kubernetes.client.rest import ApiException

from gpuconform.profile import KUBEFLOW_110_COMPONENTS
from testbed.cluster.kube import create_or_update, ignore_not_found, wait_crds_established
from testbed.cluster.waiting import wait_for

LABEL = {"app.kubernetes.io/part-of": "kubeflow", "testbed.gpuconform.io/layer": "kubeflow"}
ISSUER = "kubeflow-self-signing-issuer"
EXTRA_ADMIN_BINDING = "ml-platform-cluster-admin"
CONTROL_PLANE_TOLERATION = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                            "effect": "NoSchedule"}


def _crd(group: str, plural: str, kind: str, scope: str, status: bool) -> dict:
    version = {"name": "v1", "served": True, "storage": True,
               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    if status:
        version["subresources"] = {"status": {}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}", "labels": LABEL},
            "spec": {"group": group, "scope": scope, "versions": [version],
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind}}}


CRDS = (_crd("kubeflow.org", "profiles", "Profile", "Cluster", True),
        _crd("cert-manager.io", "clusterissuers", "ClusterIssuer", "Cluster", True),
        _crd("cert-manager.io", "issuers", "Issuer", "Namespaced", True))


def _pod_template(name: str) -> dict:
    labels = {"app": name, **LABEL}
    return {"metadata": {"labels": labels}, "spec": {
        "tolerations": [CONTROL_PLANE_TOLERATION],
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "containers": [{"name": name, "image": f"testbed.local/kubeflow/{name}:v1.10.0"}]}}


def workload(namespace: str, spec: str) -> dict:
    kind, _, name = spec.rpartition("/")
    body = {"metadata": {"name": name, "namespace": namespace, "labels": {"app": name, **LABEL}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name, **LABEL}},
                     "template": _pod_template(name)}}
    if kind.lower() == "statefulset":
        body["spec"]["serviceName"] = name
        return {"apiVersion": "apps/v1", "kind": "StatefulSet", **body}
    return {"apiVersion": "apps/v1", "kind": "Deployment", **body}


def ingress(host: str) -> dict:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "ingress-kubeflow", "namespace": "istio-system", "labels": LABEL},
            "spec": {"ingressClassName": "nginx",
                     "tls": [{"hosts": [host], "secretName": "kubeflow-tls"}],
                     "rules": [{"host": host, "http": {"paths": [{
                         "path": "/", "pathType": "Prefix",
                         "backend": {"service": {"name": "istio-ingressgateway", "port": {"number": 80}}}}]}}]}}


def cluster_admin_binding(name: str, subject: dict) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": LABEL},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [subject]}


class KubeflowObjects:
    """Creates and alters the Kubeflow objects in a running :class:`testbed.cluster.bed.TestBed`."""

    def __init__(self, api: client.ApiClient, host: str, users: dict[str, str],
                 components: dict[str, tuple[str, ...]] = KUBEFLOW_110_COMPONENTS):
        self.api, self.host, self.users, self.components = api, host, users, components
        self.core, self.apps = client.CoreV1Api(api), client.AppsV1Api(api)
        self.custom, self.rbac = client.CustomObjectsApi(api), client.RbacAuthorizationV1Api(api)

    def create(self, timeout: float = 180) -> None:
        ext = client.ApiextensionsV1Api(self.api)
        for crd in CRDS:
            try:
                ext.create_custom_resource_definition(crd)
            except ApiException as exc:
                if exc.status != 409:
                    raise
        wait_crds_established(self.api, [c["metadata"]["name"] for c in CRDS], 60)
        namespaces = set(self.components) | set(self.users.values())
        for ns in sorted(namespaces):
            create_or_update(self.core.create_namespace, self.core.patch_namespace,
                             {"metadata": {"name": ns, "labels": LABEL}})
        for ns, specs in self.components.items():
            for spec in specs:
                body = workload(ns, spec)
                if body["kind"] == "StatefulSet":
                    create_or_update(self.apps.create_namespaced_stateful_set,
                                     self.apps.patch_namespaced_stateful_set, body, ns)
                else:
                    create_or_update(self.apps.create_namespaced_deployment,
                                     self.apps.patch_namespaced_deployment, body, ns)
        create_or_update(self.api_networking().create_namespaced_ingress,
                         self.api_networking().patch_namespaced_ingress, ingress(self.host), "istio-system")
        for user, ns in self.users.items():
            body = {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": ns, "labels": LABEL},
                    "spec": {"owner": {"kind": "User", "name": user}}}
            self._create_cluster_object("kubeflow.org", "profiles", body)
        self._create_cluster_object("cert-manager.io", "clusterissuers", {
            "apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
            "metadata": {"name": ISSUER, "labels": LABEL}, "spec": {"selfSigned": {}}})
        self.set_issuer_ready(True)
        create_or_update(self.rbac.create_cluster_role_binding, self.rbac.patch_cluster_role_binding,
                         cluster_admin_binding("profiles-cluster-role-binding", {
                             "kind": "ServiceAccount", "name": "profiles-controller-service-account",
                             "namespace": "kubeflow"}))
        self.wait_available(timeout)

    def api_networking(self) -> client.NetworkingV1Api:
        return client.NetworkingV1Api(self.api)

    def _create_cluster_object(self, group: str, plural: str, body: dict) -> None:
        try:
            self.custom.create_cluster_custom_object(group, "v1", plural, body)
        except ApiException as exc:
            if exc.status != 409:
                raise

    def set_issuer_ready(self, ready: bool) -> None:
        cond = {"type": "Ready", "status": "True" if ready else "False",
                "reason": "IsReady" if ready else "ErrInitIssuer",
                "message": "" if ready else "Error initializing issuer: testbed fault",
                "lastTransitionTime": "2026-01-01T00:00:00Z"}
        self.custom.patch_cluster_custom_object_status("cert-manager.io", "v1", "clusterissuers", ISSUER,
                                                       {"status": {"conditions": [cond]}})

    def not_available(self) -> list[str]:
        missing = []
        for ns, specs in self.components.items():
            for spec in specs:
                kind, _, name = spec.rpartition("/")
                if kind.lower() == "statefulset":
                    obj = self.apps.read_namespaced_stateful_set_status(name, ns)
                    ok = (obj.status.ready_replicas or 0) >= 1
                else:
                    obj = self.apps.read_namespaced_deployment_status(name, ns)
                    ok = (obj.status.available_replicas or 0) >= 1
                if not ok:
                    missing.append(f"{ns}/{spec}")
        return missing

    def wait_available(self, timeout: float) -> None:
        wait_for("Kubeflow workloads available", lambda: not self.not_available(), timeout, interval=2)

    # -- faults ---------------------------------------------------------------------------------
    def add_extra_cluster_admin(self) -> None:
        """A second ML platform's controller holding cluster-admin (the article's lesson)."""
        create_or_update(self.rbac.create_cluster_role_binding, self.rbac.patch_cluster_role_binding,
                         cluster_admin_binding(EXTRA_ADMIN_BINDING, {
                             "kind": "ServiceAccount", "name": "platform-controller", "namespace": "ml-platform"}))

    def remove_extra_cluster_admin(self) -> None:
        ignore_not_found(self.rbac.delete_cluster_role_binding, EXTRA_ADMIN_BINDING)

    def route_ingress_elsewhere(self) -> None:
        """ingress-kubeflow sends the host to another service and lost its TLS section."""
        broken = ingress(self.host)
        broken["spec"]["tls"] = []
        broken["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"] = {
            "name": "centraldashboard", "port": {"number": 8082}}
        self.api_networking().replace_namespaced_ingress("ingress-kubeflow", "istio-system", broken)

    def restore_ingress(self) -> None:
        self.api_networking().replace_namespaced_ingress("ingress-kubeflow", "istio-system", ingress(self.host))

    def break_component(self, namespace: str, name: str) -> None:
        """The component is gone (deleted Deployment)."""
        ignore_not_found(self.apps.delete_namespaced_deployment, name, namespace)

    def heal_component(self, namespace: str, name: str, timeout: float = 60) -> None:
        create_or_update(self.apps.create_namespaced_deployment, self.apps.patch_namespaced_deployment,
                         workload(namespace, name), namespace)
        self.wait_available(timeout)
