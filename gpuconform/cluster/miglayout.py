"""What a GPU node should offer under its MIG config, from the cluster's own mig-parted config.

The one source of expected MIG counts for the cluster checks: the ConfigMap the ClusterPolicy
names (``spec.migManager.config.name``, default ``default-mig-parted-config``), evaluated for the
node's GPU (PCI id via the catalog's model of its ``nvidia.com/gpu.product``) times its
``nvidia.com/gpu.count``. A site's own config, or a redefined ``all-balanced``, is so judged by
its own counts. The MIG catalog's number for the same config is carried beside it, as a
cross-check only (``cluster.mig.catalog_agrees``).
"""
from __future__ import annotations

import dataclasses

from gpuconform.cluster import nodes
from gpuconform.cluster.errors import ClusterError
from gpuconform.cluster.facts import ClusterFacts
from gpuconform.cluster.operator import effective_spec_value
from gpuconform.mig import GpuModel, UnknownMigConfig, gpu_model, layout_resources, mig_config
from gpuconform.mig.parted import MigPartedError, NoEntry, gpu_layouts


@dataclasses.dataclass(frozen=True)
class NodeMig:
    node: str
    config: str              #: the mig-parted config the node carries (label, else the operator's default)
    source: str              #: the ConfigMap it was read from
    model: GpuModel
    gpu_id: str              #: the PCI id the config was evaluated for
    gpu_count: int
    resources: dict[str, int]        #: allocatable the cluster's config gives (mixed strategy)
    catalog: dict[str, int] | None   #: what the MIG catalog says for the same config (None: not in it)

    def __str__(self) -> str:
        return (f"mig-parted config {self.config} ({self.source}) for {self.model.key} "
                f"({self.gpu_id}) x {self.gpu_count}")

    def allocatable_problem(self, got: dict[str, int]) -> str | None:
        """None when allocatable ``got`` is what the cluster's config gives; else the difference."""
        if got == self.resources:
            return None
        return f"allocatable differs from {self}: {_diff(got, self.resources, 'expected')}"

    def catalog_disagreement(self) -> str | None:
        """None when the catalog agrees (or has no such config); else both numbers."""
        if self.catalog is None or self.catalog == self.resources:
            return None
        return (f"{self} gives {self.resources or 'nothing'}, the MIG catalog {self.catalog or 'nothing'}: "
                f"{_diff(self.resources, self.catalog, 'catalog')}")


def _diff(got: dict[str, int], want: dict[str, int], label: str) -> str:
    return "; ".join(f"{r} {got.get(r, 0)} ({label} {want.get(r, 0)})" for r in sorted(set(want) | set(got))
                     if got.get(r, 0) != want.get(r, 0))


def _gpu_count(node: dict) -> int:
    text = nodes.labels(node).get(nodes.LABEL_COUNT)
    if text is None or not text.isdigit():
        raise ClusterError(f"{nodes.name(node)}: label {nodes.LABEL_COUNT}={text!r} is no GPU count")
    return int(text)


def _node_config(node: dict, policy_spec: dict) -> str:
    """The node's nvidia.com/mig.config, else what the MIG manager applies without a label."""
    config = nodes.labels(node).get(nodes.LABEL_MIG_CONFIG) or effective_spec_value(
        policy_spec, "migManager.config.default")[1]
    if not isinstance(config, str) or not config:
        raise ClusterError(f"{nodes.name(node)}: no {nodes.LABEL_MIG_CONFIG} label and no "
                           f"spec.migManager.config.default")
    return config


def _resources(configs, config: str, model: GpuModel, count: int, where: str) -> tuple[str, dict[str, int]]:
    """(PCI id, allocatable) under ``config``. The product label does not tell which of the
    model's PCI ids the node has: the ids the config has entries for must all agree (an id it
    has none for would leave the GPUs untouched, which the allocatable check then shows)."""
    per_id, no_entry = {}, []
    for gid in model.device_ids:
        try:
            per_id[gid] = layout_resources(gpu_layouts(configs, config, gid, count))
        except NoEntry as exc:
            no_entry.append(str(exc))
        except MigPartedError as exc:
            raise ClusterError(f"{where}: {exc}") from None
    if not per_id:
        raise ClusterError(f"{where}: {no_entry[0]}")
    if len({tuple(r.items()) for r in per_id.values()}) > 1:
        raise ClusterError(f"{where}: config {config} treats the PCI ids of {model.key} differently "
                           f"({per_id}); the node does not say which one its GPUs have")
    return next(iter(per_id.items()))


def expected_for_node(cluster: ClusterFacts, policy_name: str, node: dict, config: str | None = None) -> NodeMig:
    """Expected allocatable of ``node`` under ``config`` (default: the one it carries), from the
    mig-parted ConfigMap of ClusterPolicy ``policy_name``. ClusterError when that cannot be told
    (no ConfigMap, not parseable, no entry for the GPU, ids of the model told apart, a MIG
    strategy other than mixed);
    UnknownGpuModel for a product the catalog cannot map to a PCI id."""
    spec = (cluster.cluster_policy(policy_name) or {}).get("spec") or {}
    strategy = effective_spec_value(spec, "mig.strategy")[1]
    if strategy != "mixed":
        raise ClusterError(f"ClusterPolicy spec.mig.strategy is {strategy!r}: only the mixed strategy's "
                           f"resource names are modelled")
    configmap = effective_spec_value(spec, "migManager.config.name")[1]
    model = gpu_model(nodes.labels(node).get(nodes.LABEL_PRODUCT, "<no nvidia.com/gpu.product label>"))
    config = config or _node_config(node, spec)
    count = _gpu_count(node)
    where = f"ConfigMap {cluster.operator_namespace}/{configmap}"

    def counts() -> tuple[str, dict[str, int], dict[str, int] | None]:
        gpu_id, resources = _resources(cluster.mig_parted_configs(configmap), config, model, count, where)
        try:
            catalog = layout_resources([mig_config(model, config)] * count)
        except UnknownMigConfig:
            catalog = None
        return gpu_id, resources, catalog
    # the same for every node of one model, GPU count and config: once per run, not once per node
    gpu_id, resources, catalog = cluster.derived(("mig counts", configmap, config, model.key, count), counts)
    return NodeMig(nodes.name(node), config, where, model, gpu_id, count, dict(resources),
                   None if catalog is None else dict(catalog))
