"""The platform profile: one YAML file that states every expectation of the suite.

Shape::

    name: seed-h100
    hosts: [ssh://root@gpu-1, ...]        # optional; --hosts wins
    node: {...}                            # NodeExpectations for every host
    groups:                                # overrides, applied in order
      - match: ["gpu-mig-*"]               # fnmatch on host name or id
        node: {mig: {mode: enabled}}
    timeouts: {...}

Loading validates everything (groups included, merged onto the defaults) and raises
``ProfileError`` with one line: file, field path, what was expected.
"""
from __future__ import annotations

import copy
import fnmatch
import hashlib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

Need = Literal["required", "forbidden", "any"]


class ProfileError(Exception):
    """A profile that cannot be used; str() is the one line shown to the user."""


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
    match: tuple[str, ...] = Field(..., min_length=1, description="fnmatch patterns on host name")
    node: dict[str, Any] = Field(default_factory=dict)


class Timeouts(_Strict):
    probe_s: float = Field(120, gt=0, description="whole node probe, per host")
    command_s: int = Field(30, gt=0, description="one command on a host")
    ssh_connect_s: int = Field(10, gt=0)


class Profile(_Strict):
    name: str
    description: str = ""
    hosts: tuple[str, ...] = ()
    node: dict[str, Any] | None = None
    groups: tuple[Group, ...] = ()
    timeouts: Timeouts = Timeouts()
    cluster: dict[str, Any] = Field(default_factory=dict)
    kubeflow: dict[str, Any] = Field(default_factory=dict)


def _merge(base: dict, over: dict) -> dict:
    out = copy.deepcopy(base)
    for k, v in over.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _where(err: dict, prefix: str) -> str:
    loc = ".".join(str(p) for p in err["loc"])
    return f"{prefix}.{loc}" if prefix and loc else (prefix or loc)


def _one_line(path: str, exc: ValidationError, prefix: str = "") -> ProfileError:
    e = exc.errors()[0]
    got = e.get("input")
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    shown = "" if isinstance(got, dict) or got is None else f", got {got!r}"
    return ProfileError(f"{path}: {_where(e, prefix)}: {e['msg']}{shown}{more}")


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
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read profile: {exc.strerror}") from None
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ProfileError(f"{path}: not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a mapping at the top level, got {type(data).__name__}")
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
