"""Catalogs: the long default lists of the profile, as upstream ships them, apart from the models
that use them as defaults."""
from __future__ import annotations

#: The article's GPU Operator Helm values, by ClusterPolicy spec path: the driver is installed on
#: the hosts (DKMS), no vGPU/VFIO/sandbox operands, MIG strategy mixed.
ARTICLE_CLUSTER_POLICY: dict[str, object] = {
    "driver.enabled": False, "vgpuDeviceManager.enabled": False, "vfioManager.enabled": False,
    "sandboxDevicePlugin.enabled": False, "mig.strategy": "mixed",
}

#: The closed sets of ClusterPolicy spec values, by spec path, as the operator's CRD enumerates them
#: (NVIDIA/gpu-operator api/nvidia/v1/clusterpolicy_types.go `+kubebuilder:validation:Enum`, at the
#: commit the bed builds; selftest/unit/test_profile.py compares this with the CRD it ships).
CLUSTER_POLICY_ENUMS: dict[str, tuple[str, ...]] = {
    "ccManager.defaultMode": ("on", "off", "devtools"),
    "daemonsets.updateStrategy": ("RollingUpdate", "OnDelete"),
    "driver.kernelModuleType": ("auto", "open", "proprietary"),
    "mig.strategy": ("none", "single", "mixed"),
    "migManager.config.default": ("all-disabled", ""),
    "operator.defaultRuntime": ("docker", "crio", "containerd"),
    "sandboxWorkloads.defaultWorkload": ("container", "vm-passthrough", "vm-vgpu"),
}

#: Operand DaemonSets the GPU Operator runs on every GPU worker with those values.
GPU_OPERATOR_OPERANDS = ("gpu-feature-discovery", "nvidia-container-toolkit-daemonset", "nvidia-dcgm-exporter",
                         "nvidia-device-plugin-daemonset", "nvidia-mig-manager", "nvidia-operator-validator")

#: Deployments (or ``statefulset/<name>``) of a Kubeflow 1.10 install, by namespace: what
#: kubeflow/manifests v1.10.2 ``example/kustomization.yaml`` deploys (oauth2-proxy + dex, istio,
#: cert-manager, knative serving, KServe, the Spark operator). Since v1.10.1 the example also
#: installs the Spark operator (``applications/spark/spark-operator/base/resources.yaml``:
#: spark-operator-controller, spark-operator-webhook); KServe brings
#: kserve-localmodel-controller-manager (``applications/kserve/kserve/kserve_kubeflow.yaml``).
KUBEFLOW_110_COMPONENTS: dict[str, tuple[str, ...]] = {
    "kubeflow": (
        "admission-webhook-deployment", "cache-server", "centraldashboard", "jupyter-web-app-deployment",
        "katib-controller", "katib-db-manager", "katib-mysql", "katib-ui", "kserve-controller-manager",
        "kserve-localmodel-controller-manager", "kserve-models-web-app", "kubeflow-pipelines-profile-controller",
        "statefulset/metacontroller", "metadata-envoy-deployment", "metadata-grpc-deployment", "metadata-writer",
        "minio", "ml-pipeline", "ml-pipeline-persistenceagent", "ml-pipeline-scheduledworkflow", "ml-pipeline-ui",
        "ml-pipeline-viewer-crd", "ml-pipeline-visualizationserver", "mysql", "notebook-controller-deployment",
        "profiles-deployment", "pvcviewer-controller-manager", "spark-operator-controller",
        "spark-operator-webhook", "tensorboard-controller-deployment", "tensorboards-web-app-deployment",
        "training-operator", "volumes-web-app-deployment", "workflow-controller"),
    "istio-system": ("istiod", "istio-ingressgateway", "cluster-local-gateway"),
    "auth": ("dex",),
    "oauth2-proxy": ("oauth2-proxy",),
    "cert-manager": ("cert-manager", "cert-manager-cainjector", "cert-manager-webhook"),
    "knative-serving": ("activator", "autoscaler", "controller", "net-istio-controller",
                        "net-istio-webhook", "webhook"),
}

#: Who may hold ClusterRole cluster-admin by default: the apiserver's own binding of
#: system:masters, kubeadm's (>= 1.29) binding of its admin.conf group kubeadm:cluster-admins,
#: and the Kubeflow profiles controller (kubeflow/manifests applications/profiles/upstream/rbac).
KUBEFLOW_CLUSTER_ADMIN_SUBJECTS = ("Group:system:masters", "Group:kubeadm:cluster-admins",
                                   "ServiceAccount:kubeflow:profiles-controller-service-account")

#: Endpoints every Kubeflow 1.10 user reaches through the dashboard's gateway, with what their
#: answer carries (the web apps' own API paths).
KUBEFLOW_WEB_APPS: tuple[dict, ...] = (
    dict(name="pipelines", path="/pipeline/apis/v2beta1/healthz",
         keys=("apiServerReady", "multi_user", "apiServerTagName"), equals={"apiServerReady": True}),
    dict(name="notebooks", path="/jupyter/api/namespaces/{namespace}/notebooks",
         keys=("notebooks", "success"), equals={"success": True}),
    dict(name="volumes", path="/volumes/api/namespaces/{namespace}/pvcs",
         keys=("pvcs", "success"), equals={"success": True}),
    dict(name="tensorboards", path="/tensorboards/api/namespaces/{namespace}/tensorboards",
         keys=("tensorboards", "success"), equals={"success": True}),
    dict(name="dashboard-links", path="/api/dashboard-links",
         keys=("menuLinks", "externalLinks", "documentationItems", "quickLinks")),
)
