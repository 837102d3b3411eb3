"""The profile's ``node`` section: what every GPU worker must be (tests/node), and the ``groups``
that override it for some hosts.

A group's ``node`` is a partial section (:data:`NodeOverride`, every field optional, validated at
load like the section itself); a host's expectations are the section with each matching group's
set fields laid over it, in order (:func:`apply`) — nothing is validated again per host.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints, create_model, field_validator

from gpuconform.profile._base import Pattern, Strict

#: A path on the host, absolute (it is looked at as it is written).
HostPath = Annotated[str, StringConstraints(pattern=r"^/[^\s]*$")]
#: A systemd unit name (systemctl show takes it as one word).
UnitName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9@_.:\\-]+\.(service|socket|target)$")]
#: An OS release as VERSION_ID writes it (8, 8.0, 22.04, 15.6): numbers and dots.
OsVersion = Annotated[str, StringConstraints(pattern=r"^[0-9]+(\.[0-9]+)*$")]
#: A sysctl key as /proc/sys names it with dots (net.core.bpf_jit_harden).
SysctlKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)+$")]


def _in_quotes(what: str):
    """A before-validator of a version field: YAML reads 580.95 or 8.10 as a number (and 8.10 as
    8.1), so a number is refused, said as the author wrote it."""
    def check(cls, v):
        if isinstance(v, (int, float)):
            raise ValueError(f"{what} in quotes, like \"{v}\" (YAML read {v} as a number)")
        return v
    return check


class Kernel(Strict):
    cmdline_required: tuple[str, ...] = Field(
        (), description="parameters that must be on /proc/cmdline, as `key=value` or `key`")
    cmdline_forbidden: tuple[str, ...] = Field(
        (), description="parameter names that must not be on /proc/cmdline (any value)")
    headers_required: bool = Field(True, description="/lib/modules/<running kernel>/build must exist")


class Signing(Strict):
    enforcement: Literal["off", "any"] = Field(
        "any", description="'off': /sys/module/module/parameters/sig_enforce must be N; 'any': not checked")
    lockdown_allowed: tuple[Literal["none", "integrity", "confidentiality"], ...] = Field(
        ("none",), description="kernel lockdown modes (/sys/kernel/security/lockdown) the host may be in")


class Driver(Strict):
    version: str = Field(..., description="expected NVIDIA driver version, e.g. 580.95.05")
    install: Literal["dkms", "prebuilt"] = Field(
        "dkms", description="'dkms': built by DKMS on the host (the dkms, linker and signing-rebuild checks apply)")
    dkms_module_names: tuple[str, ...] = Field(
        ("nvidia", "nvidia-open"), description="DKMS module names the driver may be registered under")
    flavour: Literal["open", "proprietary", "any"] = Field(
        "any", description="kernel module flavour /proc/driver/nvidia/version must report")
    blacklist_nouveau: bool = Field(
        True, description="nouveau must be blacklisted in modprobe.d and absent from the initramfs")

    _quoted = field_validator("version", mode="before")(_in_quotes("a driver version"))

    @field_validator("version")
    @classmethod
    def _looks_like_version(cls, v: str) -> str:
        parts = v.split(".")
        if not (2 <= len(parts) <= 3 and all(p.isdigit() for p in parts)):
            raise ValueError("a driver version like 580.95.05")
        return v


class Gpu(Strict):
    product: str = Field(..., description="nvidia-smi product name of every GPU, e.g. 'NVIDIA H100 80GB HBM3'")
    count: int = Field(..., ge=0, le=64, description="GPUs nvidia-smi must list (and /dev/nvidia0..N-1)")
    ecc: Literal["enabled", "any"] = Field("enabled", description="'enabled': ECC on for every GPU")


class Services(Strict):
    persistenced: Literal["required", "any"] = Field(
        "required", description="'required': nvidia-persistenced enabled, active, running, persistence mode on")
    persistenced_unit: UnitName = Field("nvidia-persistenced.service",
                                        description="systemd unit of nvidia-persistenced")
    fabric_manager: Literal["required", "any"] = Field(
        "any", description="'required': fabric manager at the driver's version and active (NVSwitch systems)")
    fabric_manager_unit: UnitName = Field("nvidia-fabricmanager.service",
                                          description="systemd unit of the fabric manager")
    operator_validator: Literal["required", "any"] = Field(
        "any", description="'required': the GPU Operator's validator runs on the host and has written driver-ready "
                           "(host driver), toolkit-ready, cuda-ready and plugin-ready under /run/nvidia/validations")


class ContainerRuntime(Strict):
    engine: Literal["containerd", "none"] = Field(
        "containerd", description="container engine on the host; 'none': the runtime checks are skipped")
    engine_unit: UnitName = Field("containerd.service", description="systemd unit of the engine (shown as evidence)")
    nvidia_ctk_required: bool = Field(True, description="nvidia-ctk must be on PATH")
    runtime_binary: HostPath = Field(
        "/usr/bin/nvidia-container-runtime",
        description="path of nvidia-container-runtime: executable there, and containerd's `nvidia` runtime "
                    "BinaryName (the distribution package: /usr/bin; the GPU Operator's toolkit: "
                    "/usr/local/nvidia/toolkit/nvidia-container-runtime)")
    injection: Literal["default-runtime", "runtime-class", "cdi"] = Field(
        "default-runtime",
        description="how GPU containers get their devices: 'default-runtime': `nvidia` is containerd's default "
                    "runtime (nvidia-ctk runtime configure --set-as-default; the GPU Operator before v25.10); "
                    "'runtime-class': pods choose RuntimeClass `nvidia`, runc stays the default; 'cdi': containerd "
                    "injects them from CDI specs (enable_cdi on, an NVIDIA spec under its cdi_spec_dirs; the GPU "
                    "Operator from v25.10, where `nvidia` is not the default)")
    config_version: Literal[1, 2, 3] | None = Field(
        None, description="version of the containerd config the engine runs (`version = N` in "
                          "/etc/containerd/config.toml, as `containerd config dump` shows it): 2 for containerd 1.x, "
                          "3 for containerd 2.x (which migrates older files when it loads them); null: not checked")


class SysctlRule(Strict):
    eq: int | None = Field(None, ge=-(1 << 64), le=1 << 64, description="the value must equal this")
    max: int | None = Field(None, ge=-(1 << 64), le=1 << 64, description="the value must be at most this")
    min: int | None = Field(None, ge=-(1 << 64), le=1 << 64, description="the value must be at least this")


class Mig(Strict):
    mode: Literal["enabled", "disabled", "any"] = Field(
        "any", description="MIG mode every GPU must be in (and no change pending); 'any': not checked")


Count = Annotated[int, Field(ge=0, le=1 << 40)]


class Health(Strict):
    xid_allowed: tuple[Annotated[int, Field(ge=0, le=65535)], ...] = Field((), description="Xid codes tolerated in the kernel log")
    xid_window_h: float | None = Field(None, gt=0, le=24 * 366, description="only Xids logged in the last so many "
                                       "hours count (seconds since boot against /proc/uptime); none: since boot")
    pcie_link: Literal["full", "any"] = Field(
        "full", description="'full': every GPU's PCIe link at its maximum width, and generation unless the GPU is idle "
                            "(nvidia-smi: the generation drops when the GPU is not in use); 'any': not checked")
    clock_events_allowed: tuple[Literal["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown",
                                        "sw_thermal_slowdown"], ...] = Field(
        (), description="clock limiters tolerated when engaged (HW slowdown, HW thermal, HW power brake, SW thermal)")
    remapped_rows_uncorrectable_max: Count | None = Field(
        512, description="most rows remapped for uncorrectable errors per GPU (Azure NHC's H100 limit: 512); none: not checked")
    sram_uncorrectable_max: Count | None = Field(
        0, description="most uncorrectable SRAM ECC errors per GPU since manufacture (NHC: any is a fault); none: not checked")
    sram_correctable_max: Count | None = Field(
        10000, description="most correctable SRAM ECC errors per GPU since manufacture (NHC: 10k); none: not checked")
    dcgm_diag: Literal["off", "1", "2"] = Field(
        "off", description="opt-in DCGM diagnostics where dcgmi is installed (`dcgmi diag -r <level> -j`): it loads "
                           "the GPU, seconds at 1, minutes at 2 (raise timeouts.command_s and probe_s); every test must "
                           "not Fail")
    nvlinks_per_gpu: Count | None = Field(
        None, description="NVLinks every GPU must have up (H100/H200 SXM: 18); none: NVLink is not checked")
    nvlink_recovery_errors_max: Count | None = Field(
        0, description="most NVLink recovery errors (a link retrained) per link since the driver loaded; none: not checked")
    nvlink_replay_errors_max: Count | None = Field(
        None, description="most NVLink replay errors per link; none: not checked (they grow on healthy links under load)")
    nvlink_crc_errors_max: Count | None = Field(
        None, description="most NVLink CRC errors per link; none: not checked (they grow on healthy links under load)")


class NodeExpectations(Strict):
    os_family: Literal["rhel", "debian", "suse", "any"] = Field(
        "any", description="OS family of /etc/os-release (ID, ID_LIKE): rhel, debian or suse; 'any': not checked")
    os_version: OsVersion | None = Field(
        None, description="release of the OS, matched with VERSION_ID of /etc/os-release: the release itself or one "
                          "of its point releases ('8' accepts 8, 8.0 and 8.10; '8.0' accepts 8.0 only, '22.04' accepts "
                          "22.04); null: not checked")
    kernel: Kernel = Field(Kernel(), description="kernel command line and headers")
    signing: Signing = Field(Signing(), description="module signature enforcement and lockdown")
    driver: Driver = Field(..., description="the NVIDIA driver")
    gpu: Gpu = Field(..., description="the GPUs nvidia-smi must show")
    services: Services = Field(Services(), description="NVIDIA daemons and their systemd units")
    container_runtime: ContainerRuntime = Field(ContainerRuntime(), description="NVIDIA container runtime and containerd")
    sysctl: dict[SysctlKey, SysctlRule] = Field(
        default_factory=dict, description="kernel tunables by key, each with eq/min/max bounds")
    mig: Mig = Field(Mig(), description="MIG mode")
    health: Health = Field(Health(), description="GPU health signals")

    _quoted = field_validator("os_version", mode="before")(_in_quotes("an OS release"))


# -- groups: partial sections laid over the node section -----------------------------------------
def _partial(model: type[Strict]) -> type[Strict]:
    """``model`` with every field optional (None: not overridden), sections partial too."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        kind = info.annotation
        if isinstance(kind, type) and issubclass(kind, Strict):
            kind = _partial(kind)
        elif info.metadata:  # constraints (pattern, ge ...) pydantic took out of the annotation
            kind = Annotated[(kind, *info.metadata)]
        fields[name] = (kind | None, Field(None, description=info.description))
    validators = {f"_{name}": field_validator(*dec.info.fields, mode=dec.info.mode)(_unless_none(dec.func))
                  for name, dec in model.__pydantic_decorators__.field_validators.items()}
    partial = create_model(f"{model.__name__}Override", __base__=Strict, __doc__=model.__doc__,
                           __validators__=validators, **fields)
    partial.partial_of = model  # the reference shows the full section once, not again per group
    return partial


def _unless_none(check):
    """A section's field validator for its override: None means "not overridden"."""
    def validate(cls, value):
        return value if value is None else check(value)  # check: bound to its section
    return classmethod(validate)


NodeOverride = _partial(NodeExpectations)


def apply(base: BaseModel, override: BaseModel) -> Any:
    """``base`` with the fields ``override`` sets laid over it: sections field by field, the
    ``sysctl`` mapping key by key, everything else replaced."""
    update = {}
    for name in override.model_fields_set:
        value = getattr(override, name)
        current = getattr(base, name)
        if isinstance(value, BaseModel) and isinstance(current, BaseModel):
            value = apply(current, value)
        elif isinstance(value, dict) and isinstance(current, dict):
            value = {**current, **value}
        update[name] = value
    return base.model_copy(update=update)


class Group(Strict):
    match: tuple[Pattern, ...] = Field(..., min_length=1, description="fnmatch patterns on the host's name or test id")
    node: NodeOverride = Field(  # type: ignore[valid-type]
        NodeOverride(), description="node fields that differ for these hosts (any subset of `node`)")


class K8sNodeProbes(Strict):
    """How ``k8s-node://`` hosts are probed: one short-lived privileged pod per node
    (gpuconform/node/k8s_node/)."""
    image: str = Field("docker.io/library/busybox:1.37.0",
                       description="image of the probe pods; only its `chroot` runs (closed networks: "
                                   "the internal mirror of any image with a chroot binary)")
    image_pull_policy: Literal["IfNotPresent", "Always", "Never"] = Field(
        "IfNotPresent", description="imagePullPolicy of the probe pods")
    start_s: float = Field(120, gt=0, le=86400, description="a probe pod from creation until it runs (scheduling, "
                                                  "image pull); timeouts.probe_s then bounds the probe")
    parallel: int = Field(32, gt=0, le=256, description="API requests in flight at once (pod creates, log reads)")
