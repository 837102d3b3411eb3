"""The platform profile: one YAML file that states every expectation of the suite.

Shape::

    name: seed-h100
    hosts: [ssh://root@gpu-1, ...]        # optional; --hosts wins
    node: {...}                            # NodeExpectations for every host (profile/node.py)
    groups:                                # overrides, applied in order
      - match: ["gpu-mig-*"]               # fnmatch on host name or id
        node: {mig: {mode: enabled}}
    timeouts: {...}
    cluster: {...}                         # ClusterExpectations (profile/cluster.py, tests/cluster)
    kubeflow: {...}                        # KubeflowExpectations (profile/kubeflow.py, tests/kubeflow)
    ai_conformance: {...}                  # AiConformance (profile/ai_conformance.py, -m aiconformance, --ai-conformance)

Loading validates everything once (groups included) and raises ``ProfileError`` with one line:
file, field path, what was expected. Every field carries its description:
``python -m gpuconform profile --explain`` prints them, docs/profile-reference.md is made from them.
"""
from __future__ import annotations

import fnmatch
import hashlib
from pathlib import Path

from pydantic import Field, ValidationError, field_validator

from gpuconform import yamlfile
from gpuconform.node.probe import ProbeInputs
from gpuconform.profile.ai_conformance import AiConformance, DeclaredRequirement, Product
from gpuconform.profile._base import FilePath, Pattern, Strict
from gpuconform.profile.catalogs import KUBEFLOW_110_COMPONENTS, KUBEFLOW_CLUSTER_ADMIN_SUBJECTS
from gpuconform.profile.cluster import (GPU_TOLERATION, ClusterExpectations, ClusterTimeouts, GpuOperator,
                                        GpuWorkers, Kyverno, MigAssignment, MigReconfigure, ServerVersion,
                                        Toleration, Workloads)
from gpuconform.profile.kubeflow import (KUBEFLOW_WEB_APPS, KubeflowAccount, KubeflowExpectations,
                                         KubeflowIngress, KubeflowIssuer, KubeflowTimeouts, KubeflowWebApp)
from gpuconform.profile.node import (ContainerRuntime, K8sNodeProbes, Driver, Gpu, Group, Health, Kernel, Mig, NodeExpectations,
                                     NodeOverride, Services, Signing, SysctlRule, apply)

__all__ = [
    "ProfileError", "Profile", "LoadedProfile", "load", "Timeouts", "Group", "NodeExpectations", "NodeOverride",
    "Kernel", "Signing", "Driver", "Gpu", "Services", "ContainerRuntime", "SysctlRule", "Mig", "Health",
    "ClusterExpectations", "ClusterTimeouts", "GpuOperator", "GpuWorkers", "Kyverno", "MigAssignment",
    "MigReconfigure", "ServerVersion", "Toleration", "Workloads", "GPU_TOLERATION",
    "KubeflowExpectations", "KubeflowAccount", "KubeflowIngress", "KubeflowIssuer", "KubeflowTimeouts",
    "KubeflowWebApp", "KUBEFLOW_WEB_APPS", "KUBEFLOW_110_COMPONENTS", "KUBEFLOW_CLUSTER_ADMIN_SUBJECTS",
    "FilePath", "Pattern", "AiConformance", "DeclaredRequirement", "Product",
]


class ProfileError(Exception):
    """A profile that cannot be used; str() is the one line shown to the user."""


class Timeouts(Strict):
    probe_s: float = Field(120, gt=0, le=86400, description="the whole node probe of one host, connection included")
    command_s: int = Field(30, gt=0, le=86400, description="one command of the probe on a host")
    ssh_connect_s: int = Field(10, gt=0, le=3600, description="opening the SSH connection to a host (ssh, paramiko)")


class Profile(Strict):
    name: str = Field(..., description="the profile's name (report title, report file name)")
    description: str = Field("", description="what platform this profile describes")
    hosts: tuple[str, ...] = Field((), description="node hosts as testinfra host specs (ssh://root@gpu-1); "
                                                   "--hosts wins")
    node: NodeExpectations | None = Field(None, description="what every GPU worker must be (tests/node); "
                                                            "null: no node expectations")
    groups: tuple[Group, ...] = Field((), description="node overrides for the hosts they match, applied in order")
    timeouts: Timeouts = Field(Timeouts(), description="deadlines of the node layer")
    parallel_probes: int = Field(8, gt=0, le=256, description="hosts probed at once (ssh, paramiko, local, chroot; "
                                 "k8s-node://: k8s_node.parallel), in the order given: each host's checks run as "
                                 "its probe lands. A ProxyJump bastion's sshd refuses handshakes beyond its "
                                 "MaxStartups (OpenSSH: 10)")
    k8s_node: K8sNodeProbes = Field(K8sNodeProbes(), description="k8s-node:// hosts: node checks through "
                                                                 "one privileged probe pod per node")
    cluster: ClusterExpectations = Field(ClusterExpectations(), description="the Kubernetes side (tests/cluster); "
                                                                            "null: its defaults")
    kubeflow: KubeflowExpectations = Field(KubeflowExpectations(), description="the Kubeflow endpoint "
                                                                               "(tests/kubeflow); null: none declared")
    ai_conformance: AiConformance = Field(AiConformance(), description="the CNCF Kubernetes AI Conformance "
                                          "program: its requirement checks (-m aiconformance) and the PRODUCT.yaml "
                                          "export (--ai-conformance)")

    @field_validator("cluster", "kubeflow", "ai_conformance", mode="before")
    @classmethod
    def _null_is_the_defaults(cls, value):
        """``kubeflow: null`` as ``node: null`` is accepted: nothing declared for that layer."""
        return {} if value is None else value


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
        """Expectations for a host known by any of ``names`` (hostname, test id...): the node
        section with every matching group laid over it, in order."""
        if self.profile.node is None:
            raise ProfileError(f"{self.path}: node: the profile has no node section, but node checks run")
        key = "\0".join(names)
        if key not in self._cache:
            expected = self.profile.node
            for group in self.profile.groups:
                if any(fnmatch.fnmatchcase(n, pat) for n in names for pat in group.match):
                    expected = apply(expected, group.node)
            self._cache[key] = expected
        return self._cache[key]

    def _node_sections(self) -> list:
        """The node section and every group's override, in order (what a host may be given)."""
        return ([self.profile.node] if self.profile.node else []) + [g.node for g in self.profile.groups]

    def sysctl_keys(self) -> tuple[str, ...]:
        keys: set[str] = set()
        for section in self._node_sections():
            keys |= set(section.sysctl or {})
        return tuple(sorted(keys))

    def cmdline_params(self, field: str) -> tuple[str, ...]:
        seen: list[str] = []
        for section in self._node_sections():
            seen += list(getattr(section.kernel, field, None) or ()) if section.kernel else []
        return tuple(dict.fromkeys(seen))

    def probe_inputs(self) -> ProbeInputs:
        """What the node probe reads that the profile names: every sysctl key, runtime binary path
        and systemd unit any host may be expected to have."""
        def values(section: str, field: str, default) -> tuple[str, ...]:
            found = [getattr(getattr(s, section), field) for s in self._node_sections() if getattr(s, section)]
            return tuple(dict.fromkeys(v for v in found if v)) or (default,)
        units = (values("services", "persistenced_unit", Services().persistenced_unit)
                 + values("services", "fabric_manager_unit", Services().fabric_manager_unit)
                 + values("container_runtime", "engine_unit", ContainerRuntime().engine_unit))
        return ProbeInputs(sysctls=self.sysctl_keys(),
                           runtime_binaries=values("container_runtime", "runtime_binary",
                                                   ContainerRuntime().runtime_binary),
                           units=tuple(dict.fromkeys(units)))


def _merge(base: dict, over: dict) -> dict:
    """Two YAML mappings merged key by key (``over`` wins): how a derived profile is written from a
    shipped one (selftests)."""
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load(path: str | Path) -> LoadedProfile:
    """The profile at ``path``, validated once; ``ProfileError`` (one line) when it cannot be used."""
    path = str(path)
    raw, data = yamlfile.read_mapping(path, "profile", ProfileError)
    try:
        prof = Profile.model_validate(data)
    except ValidationError as exc:
        raise ProfileError(yamlfile.one_line(path, exc)) from None
    return LoadedProfile(path, prof, raw)
