"""The platform profile: one YAML file that states every expectation of the suite.

Shape::

    name: seed-h100
    hosts: [ssh://root@gpu-1, ...]        # optional; --hosts wins
    node: {...}                            # NodeExpectations for every host
    groups:                                # overrides, applied in order
      - match: ["gpu-mig-*"]               # fnmatch on host name or id
        node: {mig: {mode: enabled}}
    timeouts: {...}
    cluster: {...}                         # ClusterExpectations (tests/cluster)
    kubeflow: {...}                        # KubeflowExpectations (tests/kubeflow)

Loading validates everything (groups included, merged onto the defaults) and raises
``ProfileError`` with one line: file, field path, what was expected.
"""
from __future__ import annotations

import copy
import fnmatch
import hashlib
import os
import urllib.parse
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuconform import yamlfile

Need = Literal["required", "forbidden", "any"]


class ProfileError(Exception):
    """A profile that cannot be used; str() is the one line shown to the user."""


def _fnmatch_pattern(pattern: str) -> str:
    """fnmatch takes an unclosed '[' (``gpu-[mig``) for a literal character: always a typo here."""
    if not pattern:
        raise ValueError("an empty pattern matches nothing")
    depth = 0
    for ch in pattern:
        if ch == "[":
            if depth:
                raise ValueError(f"{pattern!r}: '[' inside '[...]' (fnmatch pattern)")
            depth = 1
        elif ch == "]":
            depth = 0
    if depth:
        raise ValueError(f"{pattern!r}: '[' without its ']' (fnmatch pattern)")
    return pattern


def _readable_file(path: str | None) -> str | None:
    """A file the suite will read later: named now if it is missing or not a regular file."""
    if path is not None and not os.path.isfile(path):
        raise ValueError(f"{path}: " + ("a directory, not a file" if os.path.isdir(path) else
                                        "no such file" if not os.path.exists(path) else "not a regular file"))
    return path


def _https_url(url: str | None) -> str | None:
    """https://<host>[:port][/]: parsed as the HTTP client will parse it."""
    if url is None:
        return None
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise ValueError(f"not a URL ({exc})") from None
    if parts.scheme != "https" or not parts.hostname or parts.path not in ("", "/") or parts.query \
            or parts.fragment or parts.username or parts.password:
        raise ValueError("https://<host>[:port]/ (no path, query or credentials)")
    if port is not None and not 0 < port <= 65535:
        raise ValueError(f"port {port} is not in 1-65535")
    return url


Pattern = Annotated[str, AfterValidator(_fnmatch_pattern)]
FilePath = Annotated[str | None, AfterValidator(_readable_file)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Kernel(_Strict):
    cmdline_required: tuple[str, ...] = Field(
        (), description="parameters that must be on /proc/cmdline, as `key=value` or `key`")
    cmdline_forbidden: tuple[str, ...] = Field(
        (), description="parameter names that must not be on /proc/cmdline (any value)")
    headers_required: bool = Field(True, description="/lib/modules/<running>/build must exist")


class Signing(_Strict):
    enforcement: Literal["off", "any"] = Field(
        "any", description="'off': /sys/module/module/parameters/sig_enforce must be N")
    lockdown_allowed: tuple[Literal["none", "integrity", "confidentiality"], ...] = ("none",)


class Driver(_Strict):
    version: str = Field(..., description="expected NVIDIA driver version, e.g. 580.95.05")
    install: Literal["dkms", "prebuilt"] = Field(
        "dkms", description="'dkms': built by DKMS on the host (dkms checks apply)")
    dkms_module_names: tuple[str, ...] = ("nvidia", "nvidia-open")
    flavour: Literal["open", "proprietary", "any"] = "any"
    blacklist_nouveau: bool = True

    @field_validator("version", mode="before")
    @classmethod
    def _quoted(cls, v):
        if isinstance(v, (int, float)):
            raise ValueError(f"a driver version in quotes, like \"{v}\" (YAML read {v} as a number)")
        return v

    @field_validator("version")
    @classmethod
    def _looks_like_version(cls, v: str) -> str:
        parts = v.split(".")
        if not (2 <= len(parts) <= 3 and all(p.isdigit() for p in parts)):
            raise ValueError("a driver version like 580.95.05")
        return v


class Gpu(_Strict):
    product: str = Field(..., description="nvidia-smi product name, e.g. 'NVIDIA H100 80GB HBM3'")
    count: int = Field(..., ge=0)
    ecc: Literal["enabled", "any"] = "enabled"


class Services(_Strict):
    persistenced: Literal["required", "any"] = "required"
    fabric_manager: Literal["required", "any"] = "any"


class ContainerRuntime(_Strict):
    engine: Literal["containerd", "none"] = "containerd"
    nvidia_ctk_required: bool = True
    runtime_binary: str = "/usr/bin/nvidia-container-runtime"
    nvidia_default: bool = True


class SysctlRule(_Strict):
    eq: int | None = None
    max: int | None = None
    min: int | None = None


class Mig(_Strict):
    mode: Literal["enabled", "disabled", "any"] = "any"


class Health(_Strict):
    xid_allowed: tuple[int, ...] = Field((), description="Xid codes tolerated in the kernel log")


class NodeExpectations(_Strict):
    os_family: Literal["rhel", "debian", "suse", "any"] = "any"
    kernel: Kernel = Kernel()
    signing: Signing = Signing()
    driver: Driver
    gpu: Gpu
    services: Services = Services()
    container_runtime: ContainerRuntime = ContainerRuntime()
    sysctl: dict[str, SysctlRule] = Field(default_factory=dict)
    mig: Mig = Mig()
    health: Health = Health()


class Group(_Strict):
    match: tuple[Pattern, ...] = Field(..., min_length=1, description="fnmatch patterns on host name")
    node: dict[str, Any] = Field(default_factory=dict)


class Timeouts(_Strict):
    probe_s: float = Field(120, gt=0, description="whole node probe, per host")
    command_s: int = Field(30, gt=0, description="one command on a host")
    ssh_connect_s: int = Field(10, gt=0)


# ==== k8s-node:// hosts (node checks through probe pods, gpuconform/node/k8s_node.py) ==== BEGIN
class K8sNodeProbes(_Strict):
    """How ``k8s-node://`` hosts are probed: one short-lived privileged pod per node."""
    image: str = Field("docker.io/library/busybox:1.37.0",
                       description="image of the probe pods; only its `chroot` runs (closed networks: "
                                   "the internal mirror of any image with a chroot binary)")
    image_pull_policy: Literal["IfNotPresent", "Always", "Never"] = "IfNotPresent"
    start_s: float = Field(120, gt=0, description="a probe pod from creation until it runs (scheduling, "
                                                  "image pull); timeouts.probe_s then bounds the probe")
    parallel: int = Field(32, gt=0, le=256, description="API requests in flight at once (pod creates, log reads)")
# ==== k8s-node:// hosts ==== END


# -- cluster layer (tests/cluster) ----------------------------------------------------------------
def _minor(v: str) -> tuple[int, int]:
    parts = v.lstrip("v").split(".")
    return int(parts[0]), int(parts[1])


class ServerVersion(_Strict):
    min: str = Field("1.29", pattern=r"^v?\d+\.\d+$", description="lowest accepted Kubernetes minor, e.g. 1.29")
    max: str | None = Field(None, pattern=r"^v?\d+\.\d+$",
                            description="highest accepted Kubernetes minor (inclusive); null: no upper bound")

    def accepts(self, git_version: str) -> bool:
        got = _minor(git_version)
        return _minor(self.min) <= got and (self.max is None or got <= _minor(self.max))

    def __str__(self) -> str:
        return f">= {self.min}" + (f", <= {self.max}" if self.max else "")


class Toleration(_Strict):
    key: str
    operator: Literal["Exists", "Equal"] = "Exists"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    def __str__(self) -> str:
        value = f"={self.value}" if self.operator == "Equal" else ""
        return f"{self.key}{value} {self.operator} {self.effect or '(any effect)'}"


GPU_TOLERATION = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")


class GpuOperator(_Strict):
    namespace: str = Field("gpu-operator", description="namespace the GPU Operator runs in")
    cluster_policy: str = Field("cluster-policy", description="name of the ClusterPolicy (the Helm chart's)")
    spec: dict[str, Any] = Field(
        default_factory=lambda: {"driver.enabled": False, "vgpuDeviceManager.enabled": False,
                                 "vfioManager.enabled": False, "sandboxDevicePlugin.enabled": False,
                                 "mig.strategy": "mixed"},
        description="ClusterPolicy spec values, by dotted path (the article's Helm values), compared with what "
                    "the operator acts on: an unset value counts as the operator's default "
                    "(gpuconform/cluster/operator.py OPERATOR_DEFAULTS)")
    validator_driver_env: dict[str, str] = Field(
        default_factory=lambda: {"DISABLE_DEV_CHAR_SYMLINK_CREATION": "true"},
        description="env of the driver validator (spec.validator.driver.env)")
    tolerations: tuple[Toleration, ...] = Field(
        (GPU_TOLERATION,), description="tolerations every operand needs (spec.daemonsets.tolerations)")
    operands: tuple[str, ...] = Field(
        ("gpu-feature-discovery", "nvidia-container-toolkit-daemonset", "nvidia-dcgm-exporter",
         "nvidia-device-plugin-daemonset", "nvidia-mig-manager", "nvidia-operator-validator"),
        description="operand DaemonSets that must be available on every GPU worker")


class Kyverno(_Strict):
    required: bool = Field(False, description="true: Kyverno must be installed (else the check skips when absent)")
    excluded_namespaces: tuple[str, ...] = Field(
        ("gpu-operator",), description="namespaces no Kyverno policy may apply to")


class MigAssignment(_Strict):
    match: tuple[Pattern, ...] = Field(..., min_length=1, description="fnmatch patterns on node name")
    config: str = Field(..., description="mig-parted config name, e.g. all-1g.10gb")


class GpuWorkers(_Strict):
    selector: str = Field("nvidia.com/gpu.present=true", description="label selector of the GPU workers")
    min_count: int = Field(1, ge=0, description="at least this many GPU workers (the article: 3)")
    product: str = Field("NVIDIA-H100-80GB-HBM3", description="nvidia.com/gpu.product label (GFD)")
    count: int = Field(8, ge=0, description="nvidia.com/gpu.count label: GPUs per worker")
    mig_configs: tuple[MigAssignment, ...] = Field(
        (), description="nvidia.com/mig.config per node, first match wins")
    default_mig_config: str | None = Field(
        None, description="config of nodes no assignment matches; null: any (not checked)")

    def mig_config_for(self, node: str) -> str | None:
        for a in self.mig_configs:
            if any(fnmatch.fnmatchcase(node, p) for p in a.match):
                return a.config
        return self.default_mig_config


class Workloads(_Strict):
    image: str = Field("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04",
                       description="CUDA vectoradd image (closed networks: the internal mirror)")
    image_pull_secrets: tuple[str, ...] = Field((), description="secrets in the run namespace for the image")
    image_pull_policy: Literal["IfNotPresent", "Always", "Never"] = "IfNotPresent"


class MigReconfigure(_Strict):
    node: str | None = Field(None, description="GPU worker to relabel (disruptive check); null: the first MIG-capable one")
    to: str | None = Field(None, description="config to switch to and back from; null: all-balanced, or "
                                             "all-disabled when the node already has all-balanced")


class ClusterTimeouts(_Strict):
    api_s: float = Field(15, gt=0, description="first contact with the API server, and each request")
    pod_run_s: float = Field(300, gt=0, description="a workload pod from creation to Succeeded/Failed")
    image_pull_s: float = Field(300, gt=0, description="a pod stuck pulling its image this long: give up")
    event_s: float = Field(60, gt=0, description="waiting for an expected event (FailedScheduling)")
    namespace_s: float = Field(60, gt=0, description="run namespace ready (service account) / pods deleted")
    mig_reconfigure_s: float = Field(900, gt=0, description="after a relabel: mig.config.state back to success "
                                                            "and allocatable converged to the mig-parted config")


class ClusterExpectations(_Strict):
    server_version: ServerVersion = ServerVersion()
    gpu_operator: GpuOperator = GpuOperator()
    kyverno: Kyverno = Kyverno()
    gpu_workers: GpuWorkers = GpuWorkers()
    workloads: Workloads = Workloads()
    mig_reconfigure: MigReconfigure = MigReconfigure()
    timeouts: ClusterTimeouts = ClusterTimeouts()


# -- kubeflow layer (tests/kubeflow) --------------------------------------------------------------
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


class KubeflowAccount(_Strict):
    username: str = Field("user@example.com", description="dex login (the email of a static or upstream user)")
    namespace: str = Field("kubeflow-user-example-com", description="the user's profile namespace")
    password_env: str | None = Field("GPUCONFORM_KUBEFLOW_PASSWORD",
                                     description="environment variable holding the password (never the profile)")
    password_file: FilePath = Field(None, description="file holding the password (first line), if no env var")


class KubeflowIngress(_Strict):
    name: str = "ingress-kubeflow"
    namespace: str = "istio-system"
    ingress_class: str | None = Field("nginx", description="spec.ingressClassName; null: not checked")
    service: str = "istio-ingressgateway"
    port: int = 80


class KubeflowIssuer(_Strict):
    kind: Literal["ClusterIssuer", "Issuer"] = "ClusterIssuer"
    name: str = Field("kubeflow-self-signing-issuer", description="cert-manager issuer Kubeflow installs")
    namespace: str | None = Field(None, description="namespace of an Issuer (not for a ClusterIssuer)")


class KubeflowWebApp(_Strict):
    name: str
    path: str = Field(..., description="GET path; {namespace} becomes the user's profile namespace")
    keys: tuple[str, ...] = Field((), description="top-level JSON keys the answer must have")
    equals: dict[str, Any] = Field(default_factory=dict, description="top-level JSON values the answer must have")


KUBEFLOW_WEB_APPS = (
    KubeflowWebApp(name="pipelines", path="/pipeline/apis/v2beta1/healthz",
                   keys=("apiServerReady", "multi_user", "apiServerTagName"), equals={"apiServerReady": True}),
    KubeflowWebApp(name="notebooks", path="/jupyter/api/namespaces/{namespace}/notebooks",
                   keys=("notebooks", "success"), equals={"success": True}),
    KubeflowWebApp(name="volumes", path="/volumes/api/namespaces/{namespace}/pvcs",
                   keys=("pvcs", "success"), equals={"success": True}),
    KubeflowWebApp(name="tensorboards", path="/tensorboards/api/namespaces/{namespace}/tensorboards",
                   keys=("tensorboards", "success"), equals={"success": True}),
    KubeflowWebApp(name="dashboard-links", path="/api/dashboard-links",
                   keys=("menuLinks", "externalLinks", "documentationItems", "quickLinks")),
)


class KubeflowTimeouts(_Strict):
    http_s: float = Field(15, gt=0, description="one HTTP request to the Kubeflow endpoint")


class KubeflowExpectations(_Strict):
    url: Annotated[str | None, AfterValidator(_https_url)] = Field(
        None, description="https://<host>[:port]/ users open; null: the kubeflow layer is skipped")
    ca_bundle: FilePath = Field(None, description="PEM CA bundle the served certificate must verify against; "
                                                    "null: the system trust store")
    cert_min_days: int = Field(14, ge=0, description="warn when the served certificate expires sooner "
                                                     "(an expired certificate fails)")
    production: bool = Field(True, description="true: the default user@example.com / 12341234 must be rejected")
    cookie_name: str = Field("oauth2_proxy_kubeflow", description="oauth2-proxy session cookie (cookie_name)")
    account: KubeflowAccount = KubeflowAccount()
    second_account: KubeflowAccount | None = Field(
        None, description="another user: must get 403 on account's namespace (tenant isolation)")
    ingress: KubeflowIngress | None = Field(
        None, description="the Ingress in front of the istio gateway, declared when the platform has one (the "
                          "article's ingress-kubeflow: `ingress: {}`); null: none is checked (kubeflow/manifests' "
                          "example install has no Ingress, its gateway Service is ClusterIP)")
    issuer: KubeflowIssuer = KubeflowIssuer()
    components: dict[str, tuple[str, ...]] = Field(
        default_factory=lambda: dict(KUBEFLOW_110_COMPONENTS),
        description="namespace -> Deployments (statefulset/<name> for StatefulSets) that must be available")
    web_apps: tuple[KubeflowWebApp, ...] = Field(KUBEFLOW_WEB_APPS, description="endpoints that must answer the user")
    cluster_admin_subjects: tuple[str, ...] = Field(
        KUBEFLOW_CLUSTER_ADMIN_SUBJECTS,
        description="the only subjects (Kind:name or Kind:namespace:name) bound to ClusterRole cluster-admin")
    timeouts: KubeflowTimeouts = KubeflowTimeouts()


class Profile(_Strict):
    name: str
    description: str = ""
    hosts: tuple[str, ...] = ()
    node: dict[str, Any] | None = None
    groups: tuple[Group, ...] = ()
    timeouts: Timeouts = Timeouts()
    k8s_node: K8sNodeProbes = K8sNodeProbes()  # k8s-node:// hosts (block above)
    cluster: ClusterExpectations = ClusterExpectations()
    kubeflow: KubeflowExpectations = KubeflowExpectations()


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _one_line(path: str, exc: ValidationError, prefix: str = "") -> ProfileError:
    return ProfileError(yamlfile.one_line(path, exc, prefix))


class LoadedProfile:
    """A validated profile, resolved per host on demand."""

    def __init__(self, path: str, profile: Profile, raw: bytes):
        self.path = path
        self.profile = profile
        self.sha256 = hashlib.sha256(raw).hexdigest()
        self._cache: dict[str, NodeExpectations] = {}

    @property
    def name(self) -> str:
        return self.profile.name

    def node_for(self, *names: str) -> NodeExpectations:
        """Expectations for a host known by any of ``names`` (hostname, test id...)."""
        key = "\0".join(names)
        if key not in self._cache:
            merged = dict(self.profile.node or {})
            for group in self.profile.groups:
                if any(fnmatch.fnmatchcase(n, pat) for n in names for pat in group.match):
                    merged = _merge(merged, group.node)
            self._cache[key] = NodeExpectations.model_validate(merged)
        return self._cache[key]

    def sysctl_keys(self) -> tuple[str, ...]:
        keys = set((self.profile.node or {}).get("sysctl", {}))
        for g in self.profile.groups:
            keys |= set(g.node.get("sysctl", {}))
        return tuple(sorted(keys))

    def cmdline_params(self, field: str) -> tuple[str, ...]:
        seen = list((self.profile.node or {}).get("kernel", {}).get(field, ()))
        for g in self.profile.groups:
            seen += [p for p in g.node.get("kernel", {}).get(field, ()) if p not in seen]
        return tuple(dict.fromkeys(seen))


def load(path: str | Path) -> LoadedProfile:
    path = str(path)
    raw, data = yamlfile.read_mapping(path, "profile", ProfileError)
    try:
        prof = Profile.model_validate(data)
    except ValidationError as exc:
        raise _one_line(path, exc) from None
    if prof.node is not None:
        try:
            NodeExpectations.model_validate(prof.node)
        except ValidationError as exc:
            raise _one_line(path, exc, "node") from None
        for i, g in enumerate(prof.groups):
            try:
                NodeExpectations.model_validate(_merge(prof.node, g.node))
            except ValidationError as exc:
                raise _one_line(path, exc, f"groups.{i}.node") from None
    return LoadedProfile(path, prof, raw)
