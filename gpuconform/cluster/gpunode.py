"""What one GPU node should show -- GFD's labels and the device plugin's allocatable -- on the
platform the site built: its GPU stack, the MIG strategy and sharing of its device plugin, MIG
managed or not. The one place the cluster checks take these expectations from; the rules are
NVIDIA's (:mod:`gpuconform.cluster.sharing`, :mod:`gpuconform.cluster.miglayout`).

Library code: handed the profile's declarations as values, and the cluster's snapshot.
"""
from __future__ import annotations

import dataclasses

from gpuconform.cluster import miglayout, nodes, sharing
from gpuconform.cluster.errors import ClusterError
from gpuconform.cluster.facts import ClusterFacts
from gpuconform.cluster.operator import effective_spec_value
from gpuconform.mig import RESOURCE_GPU


@dataclasses.dataclass(frozen=True)
class Declared:
    """The profile's words on the platform (``cluster.gpu_stack``, ``cluster.gpu_workers``)."""
    stack: str            #: auto | gpu-operator | device-plugin
    policy: str           #: the ClusterPolicy's name
    product: str          #: GFD's product label of the whole GPU
    count: int            #: GPUs per worker
    mode: str             #: auto | none | mig-single | mig-mixed | time-slicing | mps
    replicas: int | None  #: time-slicing / mps replicas, None: the device plugin's config


def stack(facts: ClusterFacts, declared: Declared) -> tuple[str, str]:
    """(gpu-operator | device-plugin, why): the profile's, else whether the ClusterPolicy CRD is served."""
    if declared.stack != "auto":
        return declared.stack, f"cluster.gpu_stack is {declared.stack} (profile)"
    if facts.cluster_policies() is None:
        return "device-plugin", ("cluster.gpu_stack is auto and the API server serves no ClusterPolicy CRD "
                                 "(clusterpolicies.nvidia.com): the GPUs come from NVIDIA's device plugin alone")
    return "gpu-operator", "cluster.gpu_stack is auto and the ClusterPolicy CRD is served"


def _policy_spec(facts: ClusterFacts, declared: Declared) -> dict:
    return (facts.cluster_policy(declared.policy) or {}).get("spec") or {}


def _operator_replication(facts: ClusterFacts, spec: dict, node_labels: dict) -> tuple[dict, str]:
    """The device plugin's sharing config the operator hands this node, and where it was read."""
    name = effective_spec_value(spec, "devicePlugin.config.name")[1]
    if not isinstance(name, str) or not name:
        return {}, "no spec.devicePlugin.config.name: no sharing"
    key = node_labels.get(sharing.LABEL_PLUGIN_CONFIG) or effective_spec_value(spec, "devicePlugin.config.default")[1]
    where = f"ConfigMap {facts.operator_namespace}/{name}"
    if not isinstance(key, str) or not key:
        return {}, f"{where}: no {sharing.LABEL_PLUGIN_CONFIG} label and no spec.devicePlugin.config.default: no sharing"
    data = facts.configmap_data(facts.operator_namespace, name)
    if data is None:
        raise ClusterError(f"{where} (ClusterPolicy spec.devicePlugin.config.name) not found")
    if key not in data:
        raise ClusterError(f"{where} has no key {key!r} (keys: {', '.join(data) or 'none'})")
    return sharing.parse_plugin_config(data[key], f"{where} key {key}"), f"{where} key {key}"


def _label_replication(node_labels: dict) -> tuple[dict, str]:
    """Without the operator the plugin's config is not in the API: GFD's replicas label tells it."""
    text = node_labels.get(sharing.LABEL_REPLICAS, "")
    if text.isdigit() and int(text) > 1:
        how = "mps" if node_labels.get(sharing.LABEL_SHARING) == "mps" else "time-slicing"
        return ({RESOURCE_GPU: sharing.Replication(RESOURCE_GPU, int(text), None, how)},
                f"{sharing.LABEL_REPLICAS}={text} (GFD)")
    return {}, f"{sharing.LABEL_REPLICAS}={text or '<unset>'} (GFD): no sharing"


def node_sharing(facts: ClusterFacts, declared: Declared, node: dict, *,
                 as_declared: bool = True) -> sharing.NodeSharing:
    """How ``node`` shares its GPUs as the cluster runs it; ``as_declared``: with the replicas the
    profile states in their place (cluster.node.sharing compares the two)."""
    the_stack, _ = stack(facts, declared)
    labels = nodes.labels(node)
    spec = _policy_spec(facts, declared) if the_stack == "gpu-operator" else {}
    strategy, strategy_why = sharing.strategy_for(the_stack, spec, labels)
    if the_stack == "gpu-operator":
        replication, replication_why = _operator_replication(facts, spec, labels)
        managed = bool(effective_spec_value(spec, "migManager.enabled")[1]) and nodes.mig_capable(labels)
    else:
        replication, replication_why = _label_replication(labels)
        managed = False
    if as_declared and declared.replicas is not None and declared.mode in ("time-slicing", "mps"):
        replication = {RESOURCE_GPU: sharing.Replication(RESOURCE_GPU, declared.replicas, None, declared.mode)}
        replication_why = f"cluster.gpu_workers.sharing.replicas {declared.replicas} (profile)"
    return sharing.NodeSharing(nodes.name(node), the_stack, strategy, replication, managed,
                               f"{strategy_why}; {replication_why}")


def mig_managed_why(facts: ClusterFacts, declared: Declared, node: dict) -> str | None:
    """None when the MIG manager applies nvidia.com/mig.config on ``node``; else why not, in the
    profile's or the cluster's words."""
    the_stack, why = stack(facts, declared)
    if the_stack != "gpu-operator":
        return f"{why}: no MIG manager applies nvidia.com/mig.config"
    literal, enabled = effective_spec_value(_policy_spec(facts, declared), "migManager.enabled")
    if not enabled:
        return f"ClusterPolicy spec.migManager.enabled is {literal!r}: the GPU Operator runs no MIG manager"
    labels = nodes.labels(node)
    if not nodes.mig_capable(labels):
        return (f"{nodes.name(node)} has {nodes.LABEL_MIG_CAPABLE}={labels.get(nodes.LABEL_MIG_CAPABLE, '<unset>')} "
                f"({labels.get(nodes.LABEL_PRODUCT, 'no product label')}): the GPU Operator deploys no MIG manager there")
    return None


@dataclasses.dataclass(frozen=True)
class Expected:
    """GFD's labels and the device plugin's allocatable a node should show, and why."""
    labels: dict[str, str]
    allocatable: dict[str, int]
    source: str                     #: what the allocatable was computed from, for the message
    why: str                        #: where the strategy and sharing were read, for the evidence
    mig: miglayout.NodeMig | None   #: the mig-parted evaluation, where the MIG manager runs
    problem: str | None = None      #: a layout the node's device plugin cannot serve

    def allocatable_problem(self, got: dict[str, int]) -> str | None:
        if got == self.allocatable:
            return None
        diff = "; ".join(f"{r} {got.get(r, 0)} (expected {self.allocatable.get(r, 0)})"
                         for r in sorted(set(got) | set(self.allocatable)) if got.get(r, 0) != self.allocatable.get(r, 0))
        return f"allocatable differs from {self.source}: {diff}"


def expected(facts: ClusterFacts, declared: Declared, node: dict, config: str | None = None, *,
             with_allocatable: bool = True) -> Expected:
    """What ``node`` should show under ``config`` (default: the MIG config it carries);
    ``with_allocatable=False``: the labels alone (the allocatable then is not told)."""
    how = node_sharing(facts, declared, node)
    # gpu.present is the GPU Operator's label (state_manager.go), not GFD's
    labels = {nodes.LABEL_PRESENT: "true"} if how.stack == "gpu-operator" else {}
    replicas = how.replicas()
    if replicas > 1:
        labels[sharing.LABEL_REPLICAS] = str(replicas)
        labels[sharing.LABEL_SHARING] = how.replication[RESOURCE_GPU].how
    if how.mig_managed and (how.strategy == "single" or with_allocatable):
        # the layout matters to the labels under the single strategy only: a config that cannot
        # be told leaves the other strategies' labels judged
        mig = miglayout.expected_for_node(facts, declared.policy, node, how, declared.product, declared.count, config)
        product = mig.product or declared.product
        count = mig.resources.get(RESOURCE_GPU, 0) // max(replicas, 1) if mig.product else declared.count
        labels.update({nodes.LABEL_PRODUCT: how.shared_product(product), nodes.LABEL_COUNT: str(count)})
        problem = None
        if product.endswith("-MIG-INVALID"):
            problem = (f"{mig} gives MIG devices {mig.devices}: under mig.strategy single every GPU must carry MIG "
                       f"devices of one profile, else GFD labels the node {product} and the device plugin offers "
                       f"none (k8s-device-plugin internal/lm/mig-strategy.go)")
        return Expected(labels, mig.resources, _shared(str(mig), how), how.why, mig, problem)
    labels.update({nodes.LABEL_PRODUCT: how.shared_product(declared.product), nodes.LABEL_COUNT: str(declared.count)})
    if how.mig_managed:
        return Expected(labels, {}, "(labels only)", how.why, None)
    mig_counts = sharing.gfd_mig_counts(nodes.labels(node)) if how.strategy == "mixed" else {}
    if mig_counts:
        # MIG set up without the operator's MIG manager: GFD's per-profile counts are all the
        # cluster says of the layout; the plugin must advertise what GFD counted
        return Expected(labels, how.advertised(mig_counts), _shared("GFD's nvidia.com/mig-*.count labels", how),
                        how.why, None)
    return Expected(labels, how.advertised({RESOURCE_GPU: declared.count} if declared.count else {}),
                    _shared(f"{declared.count} x {declared.product} (profile)", how), how.why, None)


def _shared(source: str, how: sharing.NodeSharing) -> str:
    replicas = how.replicas()
    return source if replicas == 1 else f"{source}, {replicas} {how.replication[RESOURCE_GPU].how} replicas each"
