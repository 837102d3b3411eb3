"""The profile's ``ai_conformance`` section: what the CNCF Kubernetes AI Conformance checks
(``-m aiconformance``, tests/cluster/test_aiconformance.py) need to know of the platform, and the
status the platform team declares for what the suite cannot decide (gpuconform/checklist.py)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from gpuconform import checklist
from gpuconform.profile._base import Strict


class Declared(Strict):
    status: Literal[checklist.STATUSES] = Field(..., description="Implemented, Not Implemented, "
                                                "Partially Implemented or N/A, as the checklist's status field")
    notes: str = Field("", description="why, how, where (the checklist requires notes with N/A)")
    evidence: tuple[str, ...] = Field((), description="URLs of documentation or test results")

    @model_validator(mode="after")
    def _na_needs_notes(self):
        if self.status == "N/A" and not self.notes.strip():
            raise ValueError("status N/A needs notes saying why (the checklist requires them)")
        return self


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
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError("an http:// or https:// URL")
        return url


class KubeflowTrainer(Strict):
    installed: bool = Field(False, description="the platform runs Kubeflow Trainer (TrainJob): robust_controller is "
                            "judged on it; false: robust_controller skips saying so")
    runtime: str = Field("torch-distributed", description="ClusterTrainingRuntime a valid TrainJob refers to")
    namespace: str | None = Field(None, description="namespace of the TrainJobs robust_controller creates (its Pod "
                                  "Security must admit the runtime's pods); null: the run's namespace, Pod "
                                  "Security restricted")


class AiConformance(Strict):
    checklist_version: Literal[checklist.VERSIONS] = Field(
        "1.35", description="the checklist the platform is judged by: a requirement it does not list skips "
                            "saying so, and the level (MUST/SHOULD) shown is this version's")
    plain_image: str = Field("ubuntu:22.04", description="image without NVIDIA tools: driver_runtime_management "
                             "needs nvidia-smi injected into it by the container runtime")
    metrics: MetricsEndpoint = Field(MetricsEndpoint(), description="the accelerator metrics endpoint "
                                     "(accelerator_metrics); default: dcgm-exporter of the GPU Operator")
    dra_driver: str | None = Field(None, description="DRA driver the platform installs (gpu.nvidia.com): its "
                                   "DeviceClass and ResourceSlices must exist; null: none installed")
    kubeflow_trainer: KubeflowTrainer = Field(KubeflowTrainer(), description="Kubeflow Trainer (robust_controller)")
    declared: dict[str, Declared] = Field({}, description="requirement id -> the platform team's status and "
                                          "notes; the only status of what the suite cannot decide (gang_scheduling, "
                                          "cluster_autoscaling …); N/A on a decided one skips its check")

    @field_validator("declared")
    @classmethod
    def _known_requirements(cls, declared: dict) -> dict:
        unknown = sorted(set(declared) - checklist.REQUIREMENTS)
        if unknown:
            raise ValueError(f"not a checklist requirement id: {', '.join(unknown)} "
                             f"(known: {', '.join(sorted(checklist.REQUIREMENTS))})")
        return declared
