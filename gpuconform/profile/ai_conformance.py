"""The profile's ``ai_conformance`` section: the CNCF Kubernetes AI Conformance program.

``AiConformanceExport`` holds what ``--ai-conformance=DIR`` (the PRODUCT.yaml export,
gpuconform/aiconformance/) reads: the checklist version, the product's metadata, and the status of
the requirements the suite cannot decide. ``AiConformance`` adds what the requirement checks
(``-m aiconformance``, tests/cluster/test_aiconformance.py) need to know of the platform."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from gpuconform.aiconformance import checklist as checklists
from gpuconform.aiconformance.rules import K8S_CONFORMANCE_URL, STATUSES, placeholder
from gpuconform.profile._base import Strict


def _filled(value: str) -> str:
    """The program refuses a template's placeholder (``[Vendor Name]``) and an empty value."""
    if not value.strip():
        raise ValueError("empty")
    if placeholder(value):
        raise ValueError(f"{value!r} is the checklist's placeholder: write the product's value")
    return value


def _url(value: str) -> str:
    _filled(value)
    if not value.startswith(("https://", "http://")):
        raise ValueError("an http(s):// URL")
    return value


class Product(Strict):
    """PRODUCT.yaml's metadata (the program's camelCase names in the file; kubernetesVersion is the
    checklist's)."""
    platform_name: str = Field(..., description="platformName: the product being certified")
    platform_version: str = Field(..., description="platformVersion: the product's version (not Kubernetes')")
    vendor_name: str = Field(..., description="vendorName: the certifying entity, exactly as the CNCF landscape "
                                              "lists it among CNCF Members")
    website_url: str = Field(..., description="websiteUrl: the product's information page")
    repo_url: str | None = Field(None, description="repoUrl: the product's source repository (open source only); "
                                                   "null: left out")
    documentation_url: str = Field(..., description="documentationUrl: the product's documentation")
    product_logo_url: str = Field(..., description="productLogoUrl: the product's logo (SVG, AI or EPS)")
    description: str = Field(..., description="description: one sentence describing the product")
    contact_email_address: str = Field(..., description="contactEmailAddress: who answers for the submission")
    k8s_conformance_url: str = Field(..., description="k8sConformanceUrl: the product's Kubernetes conformance "
                                                      "submission, https://github.com/cncf/k8s-conformance/tree/"
                                                      "master/vX.Y/<product>")

    _text = field_validator("platform_name", "platform_version", "vendor_name", "description")(_filled)
    _urls = field_validator("website_url", "documentation_url", "product_logo_url")(_url)

    @field_validator("repo_url")
    @classmethod
    def _optional_url(cls, value: str | None) -> str | None:
        return None if value is None else _url(value)

    @field_validator("contact_email_address")
    @classmethod
    def _email(cls, value: str) -> str:
        _filled(value)
        if "@" not in value.strip("@"):
            raise ValueError("an email address")
        return value

    @field_validator("k8s_conformance_url")
    @classmethod
    def _k8s_conformance(cls, value: str) -> str:
        _filled(value)
        if not K8S_CONFORMANCE_URL.match(value):
            raise ValueError("https://github.com/cncf/k8s-conformance/tree/master/vX.Y/<product> (the program's form)")
        return value

    def metadata(self) -> dict[str, str]:
        """In the program's names and order."""
        names = {"platform_name": "platformName", "platform_version": "platformVersion", "vendor_name": "vendorName",
                 "website_url": "websiteUrl", "repo_url": "repoUrl", "documentation_url": "documentationUrl",
                 "product_logo_url": "productLogoUrl", "description": "description",
                 "contact_email_address": "contactEmailAddress", "k8s_conformance_url": "k8sConformanceUrl"}
        return {names[k]: v for k, v in self.model_dump().items() if v is not None}


class DeclaredRequirement(Strict):
    """A requirement's status as the platform's owner declares it: for what no check decides."""
    status: Literal[STATUSES] = Field(..., description="Implemented, Not Implemented, Partially Implemented or N/A")
    notes: str = Field(..., min_length=1, description="how the platform meets it, or why it does not apply (the "
                                                      "program requires notes for N/A)")
    evidence: tuple[str, ...] = Field((), description="URLs, or files relative to the --ai-conformance folder")


class AiConformanceExport(Strict):
    """What --ai-conformance=DIR reads (the PRODUCT.yaml export)."""
    checklist: str | None = Field(None, description="the program's checklist version (1.33 … 1.36: "
                                                    "gpuconform/aiconformance/AIConformance-X.Y.yaml); null: the newest shipped")
    product: Product | None = Field(None, description="PRODUCT.yaml's metadata; null: --ai-conformance refuses to run")
    requirements: dict[str, DeclaredRequirement] = Field(
        default_factory=dict, description="requirement id -> status the profile declares, for requirements no "
                                          "check decides (a check's result always wins)")

    @field_validator("checklist")
    @classmethod
    def _shipped(cls, value: str | None) -> str | None:
        if value is not None and value not in checklists.versions():
            raise ValueError(f"no checklist {value!r}: one of {', '.join(checklists.versions())}")
        return value

    @field_validator("requirements")
    @classmethod
    def _of_the_checklist(cls, value: dict, info: ValidationInfo) -> dict:
        if "checklist" not in info.data:  # refused itself: said once
            return value
        version = info.data["checklist"] or checklists.newest()
        ids = checklists.load(version).ids()
        unknown = [k for k in value if k not in ids]
        if unknown:
            raise ValueError(f"{', '.join(map(repr, unknown))}: not a requirement of checklist {version} "
                             f"({', '.join(ids)})")
        return value

    def chosen_checklist(self) -> str:
        return self.checklist or checklists.newest()


class MetricsEndpoint(Strict):
    url: str | None = Field(None, description="http(s) URL of a Prometheus text endpoint scraped directly; "
                            "null: the Service below through the API server's service proxy")
    namespace: str = Field("gpu-operator", description="namespace of the metrics Service")
    service: str = Field("nvidia-dcgm-exporter", description="the metrics Service (the GPU Operator's dcgm-exporter)")
    port: int = Field(9400, ge=1, le=65535, description="its port")
    path: str = Field("/metrics", description="its metrics path")
    utilization_metric: str = Field("DCGM_FI_DEV_GPU_UTIL", description="per-device utilization metric")
    memory_metric: str = Field("DCGM_FI_DEV_FB_USED", description="per-device memory usage metric")
    device_labels: tuple[str, ...] = Field(("gpu", "UUID", "GPU_I_ID"), min_length=1,
                                           description="labels naming a device (dcgm-exporter: gpu, UUID; "
                                                       "GPU_I_ID for a MIG instance): a sample needs one")

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return None if url is None else _url(url)


class KubeflowTrainer(Strict):
    installed: bool = Field(False, description="the platform runs Kubeflow Trainer (TrainJob): robust_controller is "
                            "judged on it; false: robust_controller skips saying so")
    runtime: str = Field("torch-distributed", description="ClusterTrainingRuntime a valid TrainJob refers to")
    namespace: str | None = Field(None, description="namespace of the TrainJobs robust_controller creates (its Pod "
                                  "Security must admit the runtime's pods; in-cluster, label it "
                                  "gpuconform.io/trainjobs=allowed: optional/aiconformance-rbac.yaml); null: the "
                                  "run's namespace, Pod Security restricted")


class AiConformance(AiConformanceExport):
    """The ``ai_conformance`` section."""
    plain_image: str = Field("ubuntu:22.04", description="image without NVIDIA tools: driver_runtime_management "
                             "needs nvidia-smi injected into it by the container runtime")
    metrics: MetricsEndpoint = Field(MetricsEndpoint(), description="the accelerator metrics endpoint "
                                     "(accelerator_metrics); default: dcgm-exporter of the GPU Operator")
    dra_driver: str | None = Field(None, description="DRA driver the platform installs (gpu.nvidia.com): its "
                                   "DeviceClass and ResourceSlices must exist; null: none installed")
    kubeflow_trainer: KubeflowTrainer = Field(KubeflowTrainer(), description="Kubeflow Trainer (robust_controller)")
