"""The Kubernetes side of a Kubeflow 1.10 install, created in the control-plane test bed
(testbed/cluster) through the API: namespaces, the install's Deployments/StatefulSets (KWOK
runs their pods on the control-plane nodes), the article's Ingress `ingress-kubeflow`, the
Profile and cert-manager ClusterIssuer CRDs (schema-less, written for this project) with their
objects, the profiles controller's cluster-admin binding and kubeadm's. Faults: an extra
cluster-admin binding, an issuer that is not Ready, a component not deployed, an Ingress routing
elsewhere without TLS, no Ingress at all.

What is created comes from upstream facts written here with the file they were read from
(kubeflow/manifests at tag v1.10.2 unless said otherwise), never from the suite's expectations.
"""
from __future__ import annotations

from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.kube import create_or_update, ignore_not_found, wait_crds_established
from testbed.waiting import wait_for

LABEL = {"app.kubernetes.io/part-of": "kubeflow", "testbed.gpuconform.io/layer": "kubeflow"}
ISSUER = "kubeflow-self-signing-issuer"
EXTRA_ADMIN_BINDING = "ml-platform-cluster-admin"
INGRESS = "ingress-kubeflow"
CONTROL_PLANE_TOLERATION = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                            "effect": "NoSchedule"}

#: The Deployments (``statefulset/<name>`` for StatefulSets) that kubeflow/manifests v1.10.2
#: ``example/kustomization.yaml`` deploys: (file defining them, namespace, names). Left out on
#: purpose, as the example leaves them out: cache-deployer-deployment (deleted by
#: applications/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user/patches/
#: delete.deployment.cache-deployer.yaml) and the kserve-localmodelnode-agent DaemonSet (deleted in
#: applications/kserve/kserve/kustomization.yaml); the istio-cni-node DaemonSet is not modelled.
_PIPELINE, _KNATIVE = "applications/pipeline/upstream/", "common/knative/knative-serving/base/upstream/"
MANIFESTS_V1_10_2: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("applications/admission-webhook/upstream/base/deployment.yaml", "kubeflow", ("admission-webhook-deployment",)),
    ("applications/centraldashboard/upstream/base/deployment.yaml", "kubeflow", ("centraldashboard",)),
    ("applications/jupyter/jupyter-web-app/upstream/base/deployment.yaml", "kubeflow", ("jupyter-web-app-deployment",)),
    ("applications/jupyter/notebook-controller/upstream/manager/manager.yaml", "kubeflow",
     ("notebook-controller-deployment",)),
    ("applications/katib/upstream/components/controller/controller.yaml", "kubeflow", ("katib-controller",)),
    ("applications/katib/upstream/components/db-manager/db-manager.yaml", "kubeflow", ("katib-db-manager",)),
    ("applications/katib/upstream/components/mysql/mysql.yaml", "kubeflow", ("katib-mysql",)),
    ("applications/katib/upstream/components/ui/ui.yaml", "kubeflow", ("katib-ui",)),
    ("applications/kserve/kserve/kserve_kubeflow.yaml", "kubeflow",
     ("kserve-controller-manager", "kserve-localmodel-controller-manager")),
    ("applications/kserve/models-web-app/base/deployment.yaml", "kubeflow", ("kserve-models-web-app",)),
    (_PIPELINE + "base/cache/cache-deployment.yaml", "kubeflow", ("cache-server",)),
    (_PIPELINE + "base/installs/multi-user/pipelines-profile-controller/deployment.yaml", "kubeflow",
     ("kubeflow-pipelines-profile-controller",)),
    (_PIPELINE + "base/metadata/base/metadata-envoy-deployment.yaml", "kubeflow", ("metadata-envoy-deployment",)),
    (_PIPELINE + "base/metadata/base/metadata-grpc-deployment.yaml", "kubeflow", ("metadata-grpc-deployment",)),
    (_PIPELINE + "base/pipeline/metadata-writer/metadata-writer-deployment.yaml", "kubeflow", ("metadata-writer",)),
    (_PIPELINE + "base/pipeline/ml-pipeline-apiserver-deployment.yaml", "kubeflow", ("ml-pipeline",)),
    (_PIPELINE + "base/pipeline/ml-pipeline-persistenceagent-deployment.yaml", "kubeflow",
     ("ml-pipeline-persistenceagent",)),
    (_PIPELINE + "base/pipeline/ml-pipeline-scheduledworkflow-deployment.yaml", "kubeflow",
     ("ml-pipeline-scheduledworkflow",)),
    (_PIPELINE + "base/pipeline/ml-pipeline-ui-deployment.yaml", "kubeflow", ("ml-pipeline-ui",)),
    (_PIPELINE + "base/pipeline/ml-pipeline-viewer-crd-deployment.yaml", "kubeflow", ("ml-pipeline-viewer-crd",)),
    (_PIPELINE + "base/pipeline/ml-pipeline-visualization-deployment.yaml", "kubeflow",
     ("ml-pipeline-visualizationserver",)),
    (_PIPELINE + "third-party/argo/upstream/manifests/base/workflow-controller/workflow-controller-deployment.yaml",
     "kubeflow", ("workflow-controller",)),
    (_PIPELINE + "third-party/metacontroller/base/stateful-set.yaml", "kubeflow", ("statefulset/metacontroller",)),
    (_PIPELINE + "third-party/minio/base/minio-deployment.yaml", "kubeflow", ("minio",)),
    (_PIPELINE + "third-party/mysql/base/mysql-deployment.yaml", "kubeflow", ("mysql",)),
    ("applications/profiles/upstream/manager/manager.yaml", "kubeflow", ("profiles-deployment",)),
    ("applications/pvcviewer-controller/upstream/manager/manager.yaml", "kubeflow", ("pvcviewer-controller-manager",)),
    # since v1.10.1; namespace from applications/spark/spark-operator/base/kustomization.yaml
    ("applications/spark/spark-operator/base/resources.yaml", "kubeflow",
     ("spark-operator-controller", "spark-operator-webhook")),
    ("applications/tensorboard/tensorboard-controller/upstream/manager/manager.yaml", "kubeflow",
     ("tensorboard-controller-deployment",)),
    ("applications/tensorboard/tensorboards-web-app/upstream/base/deployment.yaml", "kubeflow",
     ("tensorboards-web-app-deployment",)),
    ("applications/training-operator/upstream/base/deployment.yaml", "kubeflow", ("training-operator",)),
    ("applications/volumes-web-app/upstream/base/deployment.yaml", "kubeflow", ("volumes-web-app-deployment",)),
    ("common/cert-manager/base/upstream/cert-manager.yaml", "cert-manager",
     ("cert-manager", "cert-manager-cainjector", "cert-manager-webhook")),
    ("common/dex/base/deployment.yaml", "auth", ("dex",)),
    ("common/istio/cluster-local-gateway/base/cluster-local-gateway.yaml", "istio-system", ("cluster-local-gateway",)),
    ("common/istio/istio-install/base/install.yaml", "istio-system", ("istio-ingressgateway", "istiod")),
    (_KNATIVE + "net-istio.yaml", "knative-serving", ("net-istio-controller", "net-istio-webhook")),
    (_KNATIVE + "serving-core.yaml", "knative-serving", ("activator", "autoscaler", "controller", "webhook")),
    ("common/oauth2-proxy/base/deployment.yaml", "oauth2-proxy", ("oauth2-proxy",)),
)


def manifests_workloads() -> dict[str, tuple[str, ...]]:
    """namespace -> workloads of :data:`MANIFESTS_V1_10_2`."""
    out: dict[str, tuple[str, ...]] = {}
    for _source, namespace, names in MANIFESTS_V1_10_2:
        out[namespace] = out.get(namespace, ()) + names
    return out


def _crd(group: str, plural: str, kind: str, scope: str, status: bool, versions: tuple[str, ...] = ("v1",)) -> dict:
    """A schema-less CRD; the first of ``versions`` is the storage version, all are served
    (conversion None: the apiserver only rewrites apiVersion)."""
    def version(name: str) -> dict:
        v = {"name": name, "served": True, "storage": name == versions[0],
             "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
        if status:
            v["subresources"] = {"status": {}}
        return v
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.{group}", "labels": LABEL},
            "spec": {"group": group, "scope": scope, "versions": [version(v) for v in versions],
                     "names": {"plural": plural, "singular": kind.lower(), "kind": kind}}}


# Profiles: cluster-scoped, v1 stored and v1beta1 served too
# (applications/profiles/upstream/crd/bases/kubeflow.org_profiles.yaml).
CRDS = (_crd("kubeflow.org", "profiles", "Profile", "Cluster", True, versions=("v1", "v1beta1")),
        _crd("cert-manager.io", "clusterissuers", "ClusterIssuer", "Cluster", True),
        _crd("cert-manager.io", "issuers", "Issuer", "Namespaced", True))


def profile(namespace: str, owner: str) -> dict:
    """A user's Profile as the install writes it: kubeflow.org/v1beta1, owner a User
    (common/user-namespace/base/profile-instance.yaml with its params.env)."""
    return {"apiVersion": "kubeflow.org/v1beta1", "kind": "Profile", "metadata": {"name": namespace, "labels": LABEL},
            "spec": {"owner": {"kind": "User", "name": owner}}}


def _pod_template(name: str) -> dict:
    labels = {"app": name, **LABEL}
    return {"metadata": {"labels": labels}, "spec": {
        "tolerations": [CONTROL_PLANE_TOLERATION],
        "nodeSelector": {"node-role.kubernetes.io/control-plane": ""},
        "containers": [{"name": name, "image": f"testbed.local/kubeflow/{name}:v1.10.2"}]}}


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
    """The article's own Ingress (kubeflow/manifests' example has none: the istio-ingressgateway
    Service is made ClusterIP by common/istio/istio-install/base/patches/service.yaml)."""
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": INGRESS, "namespace": "istio-system", "labels": LABEL},
            "spec": {"ingressClassName": "nginx",
                     "tls": [{"hosts": [host], "secretName": "kubeflow-tls"}],
                     "rules": [{"host": host, "http": {"paths": [{
                         "path": "/", "pathType": "Prefix",
                         "backend": {"service": {"name": "istio-ingressgateway", "port": {"number": 80}}}}]}}]}}


def cluster_admin_binding(name: str, subject: dict, labels: dict | None = None) -> dict:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": LABEL if labels is None else labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [subject]}


#: The profiles controller's binding: applications/profiles/upstream/rbac/role_binding.yaml
#: (cluster-rolebinding -> controller-service-account) with namePrefix ``profiles-`` from
#: applications/profiles/upstream/default/kustomization.yaml, namespace kubeflow from
#: applications/profiles/pss/kustomization.yaml.
PROFILES_BINDING = cluster_admin_binding("profiles-cluster-rolebinding", {
    "kind": "ServiceAccount", "name": "profiles-controller-service-account", "namespace": "kubeflow"})
#: kubeadm >= 1.29 binds the group of admin.conf's certificate to cluster-admin (kubernetes/kubernetes
#: cmd/kubeadm/app/phases/kubeconfig/kubeconfig.go, EnsureAdminClusterRoleBindingImpl): binding and
#: group both named kubeadm:cluster-admins, no labels.
KUBEADM_BINDING = cluster_admin_binding("kubeadm:cluster-admins", {
    "apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "kubeadm:cluster-admins"}, labels={})


class KubeflowObjects:
    """Creates and alters the Kubeflow objects in a running :class:`testbed.cluster.bed.TestBed`."""

    def __init__(self, api: client.ApiClient, host: str, users: dict[str, str],
                 components: dict[str, tuple[str, ...]] | None = None):
        self.api, self.host, self.users = api, host, users
        self.components = manifests_workloads() if components is None else components
        self.core, self.apps = client.CoreV1Api(api), client.AppsV1Api(api)
        self.custom, self.rbac = client.CustomObjectsApi(api), client.RbacAuthorizationV1Api(api)
        self.networking = client.NetworkingV1Api(api)

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
                self._apply_workload(ns, spec)
        self.restore_ingress()
        for user, ns in self.users.items():
            self._create_cluster_object(profile(ns, user))
        self._create_cluster_object({
            "apiVersion": "cert-manager.io/v1", "kind": "ClusterIssuer",
            "metadata": {"name": ISSUER, "labels": LABEL}, "spec": {"selfSigned": {}}})
        self.set_issuer_ready(True)
        for binding in (PROFILES_BINDING, KUBEADM_BINDING):
            create_or_update(self.rbac.create_cluster_role_binding, self.rbac.patch_cluster_role_binding, binding)
        self.wait_available(timeout)

    def _apply_workload(self, namespace: str, spec: str) -> None:
        body = workload(namespace, spec)
        if body["kind"] == "StatefulSet":
            create_or_update(self.apps.create_namespaced_stateful_set, self.apps.patch_namespaced_stateful_set,
                             body, namespace)
        else:
            create_or_update(self.apps.create_namespaced_deployment, self.apps.patch_namespaced_deployment,
                             body, namespace)

    def _create_cluster_object(self, body: dict) -> None:
        group, _, version = body["apiVersion"].partition("/")
        plural = next(c["spec"]["names"]["plural"] for c in CRDS
                      if c["spec"]["group"] == group and c["spec"]["names"]["kind"] == body["kind"])
        try:
            self.custom.create_cluster_custom_object(group, version, plural, body)
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
        self.networking.replace_namespaced_ingress(INGRESS, "istio-system", broken)

    def delete_ingress(self) -> None:
        """No Ingress at all, as an install from kubeflow/manifests' example has."""
        ignore_not_found(self.networking.delete_namespaced_ingress, INGRESS, "istio-system")

    def restore_ingress(self) -> None:
        """ingress-kubeflow as the article writes it (created, or put back whole)."""
        try:
            self.networking.replace_namespaced_ingress(INGRESS, "istio-system", ingress(self.host))
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.networking.create_namespaced_ingress("istio-system", ingress(self.host))

    def break_component(self, namespace: str, name: str) -> None:
        """The component is not deployed (its Deployment is absent, e.g. the Spark operator on an
        install from v1.10.0's example, which did not include it)."""
        ignore_not_found(self.apps.delete_namespaced_deployment, name, namespace)

    def heal_component(self, namespace: str, name: str, timeout: float = 60) -> None:
        self._apply_workload(namespace, name)
        self.wait_available(timeout)
