"""The profile's ``cluster`` section: what tests/cluster expects of the Kubernetes side (API server,
GPU Operator, GPU workers, MIG, workloads)."""
from __future__ import annotations

import fnmatch
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from gpuconform.mig import catalog as mig_catalog
from gpuconform.profile import catalogs
from gpuconform.profile._base import Pattern, Strict


def _minor(v: str) -> tuple[int, int]:
    parts = v.lstrip("v").split(".")
    return int(parts[0]), int(parts[1])


class ServerVersion(Strict):
    min: str = Field("1.29", pattern=r"^v?\d+\.\d+$", description="lowest accepted Kubernetes minor, e.g. 1.29")
    max: str | None = Field(None, pattern=r"^v?\d+\.\d+$",
                            description="highest accepted Kubernetes minor (inclusive); null: no upper bound")

    def accepts(self, git_version: str) -> bool:
        got = _minor(git_version)
        return _minor(self.min) <= got and (self.max is None or got <= _minor(self.max))

    def __str__(self) -> str:
        return f">= {self.min}" + (f", <= {self.max}" if self.max else "")


class Toleration(Strict):
    """A taint the operands must tolerate, written as the toleration that would tolerate it. The
    ClusterPolicy's tolerations are judged by the scheduler's rules, not as text: a toleration
    without effect tolerates every effect, one with operator Exists and no key every taint."""
    key: str = Field(..., description="taint key the toleration matches")
    operator: Literal["Exists", "Equal"] = Field("Exists", description="Exists: any value; Equal: `value`")
    value: str | None = Field(None, description="taint value (operator Equal)")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(
        None, description="taint effect; null: any effect")

    def __str__(self) -> str:
        value = f"={self.value}" if self.operator == "Equal" else ""
        return f"{self.key}{value} {self.operator} {self.effect or '(any effect)'}"

    def taints(self) -> list[dict]:
        """The taints this toleration stands for (each effect when it names none)."""
        effects = [self.effect] if self.effect else ["NoSchedule", "PreferNoSchedule", "NoExecute"]
        value = {"value": self.value} if self.operator == "Equal" and self.value is not None else {}
        return [{"key": self.key, **value, "effect": e} for e in effects]


GPU_TOLERATION = Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")


class GpuOperator(Strict):
    namespace: str = Field("gpu-operator", description="namespace the GPU Operator runs in")
    cluster_policy: str = Field("cluster-policy", description="name of the ClusterPolicy (the Helm chart's)")
    spec: dict[str, Any] = Field(
        default_factory=lambda: dict(catalogs.ARTICLE_CLUSTER_POLICY),
        description="ClusterPolicy spec values, by dotted path, compared with what the operator acts on (an unset "
                    "value counts as the operator's default: gpuconform/cluster/operator.py OPERATOR_DEFAULTS). "
                    "What a profile writes here is merged over the defaults, the article's Helm values "
                    "(driver.enabled, vgpuDeviceManager.enabled, vfioManager.enabled, sandboxDevicePlugin.enabled: "
                    "false; mig.strategy: mixed): a path set replaces that default, a path set to null is not "
                    "checked, every other default stays")

    @field_validator("spec", mode="before")
    @classmethod
    def _over_the_defaults(cls, spec: Any) -> Any:
        """``spec: {mig.strategy: single}`` keeps the other defaults; ``path: null`` drops one."""
        if not isinstance(spec, dict):
            return spec
        merged = {**catalogs.ARTICLE_CLUSTER_POLICY, **spec}
        return {path: value for path, value in merged.items() if value is not None}

    @field_validator("spec")
    @classmethod
    def _closed_sets(cls, spec: dict[str, Any]) -> dict[str, Any]:
        """A value the operator's CRD would refuse (``mig.strategy: singel``) is a profile error at load."""
        bad = [f"{path}: {spec[path]!r} is not one of {', '.join(repr(v) for v in allowed)}"
               for path, allowed in catalogs.CLUSTER_POLICY_ENUMS.items() if path in spec and spec[path] not in allowed]
        if bad:
            raise ValueError("; ".join(bad) + " (the ClusterPolicy CRD's values)")
        return spec

    validator_driver_env: dict[str, str] = Field(
        default_factory=lambda: {"DISABLE_DEV_CHAR_SYMLINK_CREATION": "true"},
        description="env of the driver validator (spec.validator.driver.env)")
    tolerations: tuple[Toleration, ...] = Field(
        (GPU_TOLERATION,), description="tolerations every operand needs (spec.daemonsets.tolerations)")
    operands: tuple[str, ...] | None = Field(
        None, description="operand DaemonSets that must be available on the GPU workers; null: every operand the "
                          "ClusterPolicy enables (its effective spec: gpu-feature-discovery, nvidia-device-plugin-"
                          "daemonset, ... as the operator deploys them; gpuconform/cluster/operator.py OPERANDS)")


class Kyverno(Strict):
    required: bool = Field(False, description="true: Kyverno must be installed (else the check skips when absent)")
    excluded_namespaces: tuple[str, ...] = Field(
        ("gpu-operator",), description="namespaces no Kyverno policy may apply to")


GpuStack = Literal["auto", "gpu-operator", "device-plugin"]
SharingMode = Literal["auto", "none", "mig-single", "mig-mixed", "time-slicing", "mps"]


class Sharing(Strict):
    """How the GPU workers share their GPUs, as the site configured NVIDIA's device plugin and GFD.
    ``auto``: what the cluster itself says (ClusterPolicy spec.mig.strategy and the device plugin's
    config ConfigMap with the GPU Operator; GFD's labels with the device plugin alone)."""
    mode: SharingMode = Field(
        "auto", description="auto | none (whole GPUs) | mig-single | mig-mixed | time-slicing | mps")
    replicas: int | None = Field(
        None, ge=2, le=1024, description="time-slicing / mps: replicas per GPU (null: the device plugin's config)")


class MigAssignment(Strict):
    match: tuple[Pattern, ...] = Field(..., min_length=1, description="fnmatch patterns on node name")
    config: str = Field(..., description="mig-parted config name, e.g. all-1g.10gb")


class GpuWorkers(Strict):
    selector: str = Field("nvidia.com/gpu.present=true", description="label selector of the GPU workers")
    min_count: int = Field(1, ge=0, le=100_000, description="at least this many GPU workers (the article: 3)")
    product: str = Field("NVIDIA-H100-80GB-HBM3", description="nvidia.com/gpu.product label (GFD)")
    count: int = Field(8, ge=0, le=64, description="nvidia.com/gpu.count label: GPUs per worker")
    mig_configs: tuple[MigAssignment, ...] = Field(
        (), description="nvidia.com/mig.config per node, first match wins")
    default_mig_config: str | None = Field(
        None, description="config of nodes no assignment matches; null: any (not checked)")
    custom_mig_configs: tuple[str, ...] = Field(
        (), description="config names the site added to its mig-parted ConfigMap: a config name in this profile must "
                        "be one of the GPU Operator's default configs for `product` (the MIG catalog: all-disabled, "
                        "all-enabled, all-<profile>, all-balanced) or one of these")
    sharing: Sharing = Field(Sharing(), description="how the GPUs are shared (MIG strategy, time-slicing, MPS)")

    def known_mig_configs(self) -> tuple[str, ...]:
        """The mig-parted config names this profile may assign: the catalog's for ``product`` (of
        every model the catalog knows when it does not know that one) and the site's own."""
        try:
            models = [mig_catalog.gpu_model(self.product)]
        except mig_catalog.UnknownGpuModel:
            models = list(mig_catalog.KNOWN_GPU_MODELS.values())
        names = {name for m in models for name in m.configs}
        return tuple(sorted(names)) + tuple(n for n in self.custom_mig_configs if n not in names)

    def unknown_mig_config(self, name: str | None) -> str | None:
        """Why ``name`` is not a config this profile may assign (a typo), or None."""
        known = self.known_mig_configs()
        if name is None or name in known:
            return None
        return (f"{name!r} is not a mig-parted config of {self.product} (known: {', '.join(known)}); a config of the "
                f"site's own mig-parted ConfigMap goes in cluster.gpu_workers.custom_mig_configs too")

    @model_validator(mode="after")
    def _mig_config_names(self) -> "GpuWorkers":
        bad = [f"mig_configs.{i}.config: {why}" for i, a in enumerate(self.mig_configs)
               if (why := self.unknown_mig_config(a.config))]
        if why := self.unknown_mig_config(self.default_mig_config):
            bad.append(f"default_mig_config: {why}")
        if bad:
            raise ValueError("; ".join(bad))
        return self

    def mig_config_for(self, node: str) -> str | None:
        for a in self.mig_configs:
            if any(fnmatch.fnmatchcase(node, p) for p in a.match):
                return a.config
        return self.default_mig_config


class Workloads(Strict):
    image: str = Field("nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04",
                       description="CUDA vectoradd image (closed networks: the internal mirror)")
    image_pull_secrets: tuple[str, ...] = Field((), description="secrets in the run namespace for the image")
    image_pull_policy: Literal["IfNotPresent", "Always", "Never"] = Field(
        "IfNotPresent", description="imagePullPolicy of the test pods")


class MigReconfigure(Strict):
    node: str | None = Field(None, description="GPU worker to relabel (disruptive check); null: the first MIG-capable one")
    to: str | None = Field(None, description="config to switch to and back from; null: all-balanced, or "
                                             "all-disabled when the node already has all-balanced")


class ClusterTimeouts(Strict):
    api_s: float = Field(15, gt=0, le=86400, description="first contact with the API server, and each request")
    pod_run_s: float = Field(300, gt=0, le=86400, description="a workload pod from creation to Succeeded/Failed")
    image_pull_s: float = Field(300, gt=0, le=86400, description="a pod stuck pulling its image this long: give up")
    event_s: float = Field(60, gt=0, le=86400, description="waiting for an expected event (FailedScheduling)")
    namespace_s: float = Field(60, gt=0, le=86400, description="run namespace ready (service account) / pods deleted")
    mig_reconfigure_s: float = Field(900, gt=0, le=86400, description="after a relabel: mig.config.state back to success "
                                                            "and allocatable converged to the mig-parted config")


class ClusterExpectations(Strict):
    gpu_stack: GpuStack = Field(
        "auto", description="gpu-operator: NVIDIA's GPU Operator runs the GPU stack (its checks apply); "
                            "device-plugin: NVIDIA's device plugin (and GFD) without the operator; auto: "
                            "gpu-operator when the API server serves the ClusterPolicy CRD")
    server_version: ServerVersion = Field(ServerVersion(), description="accepted Kubernetes versions")
    gpu_operator: GpuOperator = Field(GpuOperator(), description="the NVIDIA GPU Operator and its ClusterPolicy")
    kyverno: Kyverno = Field(Kyverno(), description="Kyverno policies that must leave the GPU Operator alone")
    gpu_workers: GpuWorkers = Field(GpuWorkers(), description="the GPU worker nodes, their labels and MIG configs")
    workloads: Workloads = Field(Workloads(), description="the test pods the cluster checks run")
    mig_reconfigure: MigReconfigure = Field(MigReconfigure(), description="the disruptive MIG relabel check")
    timeouts: ClusterTimeouts = Field(ClusterTimeouts(), description="deadlines of the cluster layer")

    @model_validator(mode="after")
    def _mig_reconfigure_target(self) -> "ClusterExpectations":
        if why := self.gpu_workers.unknown_mig_config(self.mig_reconfigure.to):
            raise ValueError(f"mig_reconfigure.to: {why}")
        return self


