"""How a GPU node shares its GPUs, as the platform configured NVIDIA's device plugin and GPU
Feature Discovery (GFD), and what the node should then advertise: the labels and allocatable of
each sharing mode follow NVIDIA's code, not the article's platform.

Sources (NVIDIA/k8s-device-plugin v0.18.0 unless said):

* MIG strategy (``internal/lm/mig-strategy.go``): ``none`` and GPUs without MIG: whole GPUs as
  ``nvidia.com/gpu``; ``mixed``: ``nvidia.com/mig-<profile>`` per MIG device, whole GPUs stay
  ``nvidia.com/gpu``; ``single`` (``newMigStrategySingleLabeler``): every MIG device is an
  ``nvidia.com/gpu``, GFD's ``gpu.product`` becomes ``<product>-MIG-<profile>`` and ``gpu.count``
  the number of MIG devices; MIG on some GPUs and off on others, an empty MIG GPU or two
  profiles on one node are invalid (``<product>-MIG-INVALID``, count 0).
* Time-slicing and MPS (``api/config/v1/sharing.go``: the ``mps`` section when present, else
  ``timeSlicing``; ``internal/lm/resource.go`` baseLabeler): a resource listed with
  ``replicas: N`` is advertised N times per device; GFD appends ``-SHARED`` to its product
  unless the resource is renamed (``rename``, or ``renameByDefault``: ``<resource>.shared``,
  ``api/config/v1/consts.go``) and writes ``<resource>.replicas=N`` and
  ``<resource>.sharing-strategy`` (time-slicing or mps).
* Where the config comes from with the GPU Operator (gpu-operator
  ``controllers/object_controls.go`` handleDevicePluginConfig, transformConfigManager*): the
  ConfigMap ``spec.devicePlugin.config.name`` in the operator's namespace, the key the node's
  label ``nvidia.com/device-plugin.config`` names, else ``spec.devicePlugin.config.default``;
  none of them: no sharing (``FALLBACK_STRATEGIES=empty``). The MIG strategy is
  ``spec.mig.strategy`` (the operator sets MIG_STRATEGY on the plugin and GFD).
* The MIG manager runs only where the operator labels the node for it (gpu-operator
  ``controllers/state_manager.go`` hasMIGCapableGPU: ``nvidia.com/mig.capable=true``, or without
  that label a product naming H100, A100 or A30; never on a vGPU host).

This module is library code: it is handed the profile's declaration and the cluster's objects.
"""
from __future__ import annotations

import dataclasses

import yaml

from gpuconform.cluster.errors import ClusterError
from gpuconform.cluster.operator import effective_spec_value
from gpuconform.mig import RESOURCE_GPU, RESOURCE_MIG_PREFIX

LABEL_MIG_STRATEGY = "nvidia.com/mig.strategy"
LABEL_REPLICAS = "nvidia.com/gpu.replicas"
LABEL_SHARING = "nvidia.com/gpu.sharing-strategy"
LABEL_PLUGIN_CONFIG = "nvidia.com/device-plugin.config"
MIG_STRATEGIES = ("none", "single", "mixed")
#: the profile's sharing mode -> the MIG strategy it implies
MODE_STRATEGY = {"mig-single": "single", "mig-mixed": "mixed"}


@dataclasses.dataclass(frozen=True)
class Replication:
    """One resource of the device plugin's sharing config."""
    resource: str
    replicas: int
    renamed_to: str | None   #: the name it is advertised under, when renamed
    how: str                 #: time-slicing | mps


def parse_plugin_config(text: str, where: str) -> dict[str, Replication]:
    """``sharing.timeSlicing`` / ``sharing.mps`` of a device plugin config file (api/config/v1),
    by resource name. Not such a file: ClusterError."""
    try:
        doc = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ClusterError(f"{where}: not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict) or doc.get("version") != "v1":
        raise ClusterError(f"{where}: not a device plugin config (version: v1)")
    out: dict[str, Replication] = {}
    sharing = doc.get("sharing") or {}
    how, key = ("mps", "mps") if sharing.get("mps") is not None else ("time-slicing", "timeSlicing")
    section = sharing.get(key) or {}
    rename_all = bool(section.get("renameByDefault"))
    for r in section.get("resources") or []:
        name, replicas = r.get("name") if isinstance(r, dict) else None, r.get("replicas") if isinstance(r, dict) else None
        if not isinstance(name, str) or type(replicas) is not int or replicas < 1:
            raise ClusterError(f"{where}: sharing.{key}.resources entry {r!r} needs a name and replicas >= 1")
        renamed = r.get("rename") or (f"{name}.shared" if rename_all and replicas > 1 else None)
        out[name] = Replication(name, replicas, renamed, how)
    return out


@dataclasses.dataclass(frozen=True)
class NodeSharing:
    """How one GPU node shares its GPUs, and where each fact was read."""
    node: str
    stack: str                 #: gpu-operator | device-plugin
    strategy: str              #: MIG strategy of the device plugin and GFD
    replication: dict[str, Replication]
    mig_managed: bool          #: the GPU Operator's MIG manager applies nvidia.com/mig.config here
    why: str                   #: where the strategy and replication were read, in the cluster's words

    @property
    def mode(self) -> str:
        """none | mig-single | mig-mixed | time-slicing | mps, as the cluster runs it."""
        hows = {r.how for r in self.replication.values() if r.replicas > 1}
        if hows:
            return sorted(hows)[-1]
        return {"single": "mig-single", "mixed": "mig-mixed"}.get(self.strategy, "none")

    def replicas(self, resource: str = RESOURCE_GPU) -> int:
        r = self.replication.get(resource)
        return r.replicas if r else 1

    def shared_product(self, product: str, resource: str = RESOURCE_GPU) -> str:
        """GFD's product label for ``resource``: ``-SHARED`` when replicated and not renamed."""
        r = self.replication.get(resource)
        shared = r is not None and r.replicas > 1 and not r.renamed_to
        return f"{product}-SHARED" if shared else product

    def advertised(self, resources: dict[str, int]) -> dict[str, int]:
        """What the device plugin advertises for ``resources`` (devices per name) once replicated."""
        out: dict[str, int] = {}
        for name, count in resources.items():
            r = self.replication.get(name)
            key = (r.renamed_to or name) if r else name
            out[key] = out.get(key, 0) + count * (r.replicas if r else 1)
        return dict(sorted(out.items()))


def single_strategy(per_gpu, product: str) -> tuple[dict[str, int], str, int]:
    """(allocatable, GFD product, GFD count) of GPUs carrying ``per_gpu`` (MigConfig each) under
    the single strategy (mig-strategy.go newMigStrategySingleLabeler)."""
    enabled = [g for g in per_gpu if g.mig_enabled]
    if not enabled:
        return ({RESOURCE_GPU: len(per_gpu)} if per_gpu else {}), product, len(per_gpu)
    profiles = {p for g in enabled for p, n in g.devices.items() if n}
    if len(enabled) != len(per_gpu) or any(not any(g.devices.values()) for g in enabled) or len(profiles) != 1:
        return {}, f"{product}-MIG-INVALID", 0
    total = sum(n for g in enabled for n in g.devices.values())
    return {RESOURCE_GPU: total}, f"{product}-MIG-{profiles.pop()}", total


def gfd_mig_counts(labels: dict[str, str]) -> dict[str, int]:
    """``nvidia.com/mig-<profile>.count`` labels GFD writes under the mixed strategy."""
    out = {}
    for key, value in labels.items():
        if key.startswith(RESOURCE_MIG_PREFIX) and key.endswith(".count") and value.isdigit():
            out[key[:-len(".count")]] = int(value)
    return out


def strategy_for(stack: str, policy_spec: dict, labels: dict[str, str]) -> tuple[str, str]:
    """(MIG strategy, where read): the ClusterPolicy's with the operator, GFD's label without."""
    if stack == "gpu-operator":
        literal, effective = effective_spec_value(policy_spec, "mig.strategy")
        shown = "unset, the operands' default" if literal is None or literal is not effective else repr(literal)
        return str(effective), f"ClusterPolicy spec.mig.strategy {shown}"
    value = labels.get(LABEL_MIG_STRATEGY)
    if value is None:
        return "none", f"no {LABEL_MIG_STRATEGY} label (GFD writes it for single and mixed)"
    return value, f"{LABEL_MIG_STRATEGY}={value} (GFD)"
