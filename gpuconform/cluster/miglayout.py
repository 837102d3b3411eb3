"""What a GPU node should offer under its MIG config, from the cluster's own mig-parted config.

The one source of expected MIG counts for the cluster checks: the ConfigMap the ClusterPolicy
names (``spec.migManager.config.name``, default ``default-mig-parted-config``), evaluated for the
node's GPU (PCI id via the catalog's model of its ``nvidia.com/gpu.product``) times its
``nvidia.com/gpu.count``. A site's own config, or a redefined ``all-balanced``, is so judged by
its own counts. The MIG catalog's number for the same config is carried beside it, as a
cross-check only (``cluster.mig.catalog_agrees``). What the node then advertises follows its
MIG strategy and the device plugin's sharing config (:mod:`gpuconform.cluster.sharing`).

A GPU model the catalog does not know has no PCI id to select the config's filtered entries
with: the config is then read for the entries that name no PCI id (``all-disabled`` and the
like); a config that has none for it cannot be told, and neither can the cross-check.
"""
from __future__ import annotations

import dataclasses

from gpuconform.cluster import nodes
from gpuconform.cluster.errors import ClusterError
from gpuconform.cluster.facts import ClusterFacts
from gpuconform.cluster.operator import effective_spec_value
from gpuconform.cluster.sharing import NodeSharing, single_strategy
from gpuconform.mig import (RESOURCE_GPU, GpuModel, MigConfig, UnknownGpuModel, UnknownMigConfig, gpu_model,
                            layout_resources, mig_config)
from gpuconform.mig.parted import MigPartedError, NoEntry, gpu_layouts

#: the PCI id an unknown model is evaluated with: only entries without a device filter apply
NO_PCI_ID = "0x00000000"


@dataclasses.dataclass(frozen=True)
class NodeMig:
    node: str
    config: str              #: the mig-parted config the node carries (label, else the operator's default)
    source: str              #: the ConfigMap it was read from
    model: str               #: the catalog's key, or the product label of a model it does not know
    gpu_id: str              #: the PCI id the config was evaluated for
    gpu_count: int
    resources: dict[str, int]        #: allocatable the node advertises under its strategy and sharing
    devices: dict[str, int]          #: MIG devices and whole GPUs the config gives (mixed naming)
    catalog: dict[str, int] | None   #: what the MIG catalog says for the same config (None: not in it)
    strategy: str = "mixed"
    product: str | None = None       #: GFD's product label under the single strategy, None otherwise

    def __str__(self) -> str:
        how = "" if self.strategy == "mixed" else f", mig.strategy {self.strategy}"
        return (f"mig-parted config {self.config} ({self.source}) for {self.model} "
                f"({self.gpu_id}) x {self.gpu_count}{how}")

    def allocatable_problem(self, got: dict[str, int]) -> str | None:
        """None when allocatable ``got`` is what the cluster's config gives; else the difference."""
        if got == self.resources:
            return None
        return f"allocatable differs from {self}: {_diff(got, self.resources, 'expected')}"

    def catalog_disagreement(self) -> str | None:
        """None when the catalog agrees (or has no such config); else both numbers."""
        if self.catalog is None or self.catalog == self.devices:
            return None
        return (f"{self} gives {self.devices or 'nothing'}, the MIG catalog {self.catalog or 'nothing'}: "
                f"{_diff(self.devices, self.catalog, 'catalog')}")


def _diff(got: dict[str, int], want: dict[str, int], label: str) -> str:
    return "; ".join(f"{r} {got.get(r, 0)} ({label} {want.get(r, 0)})" for r in sorted(set(want) | set(got))
                     if got.get(r, 0) != want.get(r, 0))


def _node_config(node: dict, policy_spec: dict) -> str:
    """The node's nvidia.com/mig.config, else what the MIG manager applies without a label."""
    config = nodes.labels(node).get(nodes.LABEL_MIG_CONFIG) or effective_spec_value(
        policy_spec, "migManager.config.default")[1]
    if not isinstance(config, str) or not config:
        raise ClusterError(f"{nodes.name(node)}: no {nodes.LABEL_MIG_CONFIG} label and no "
                           f"spec.migManager.config.default")
    return config


def _layouts(configs, config: str, device_ids: tuple[str, ...], count: int, where: str,
             model: str) -> tuple[str, tuple[MigConfig, ...]]:
    """(PCI id, each GPU's layout) under ``config``. The product label does not tell which of the
    model's PCI ids the node has: the ids the config has entries for must all agree (an id it
    has none for would leave the GPUs untouched, which the allocatable check then shows)."""
    per_id, no_entry = {}, []
    for gid in device_ids:
        try:
            per_id[gid] = tuple(gpu_layouts(configs, config, gid, count))
        except NoEntry as exc:
            no_entry.append(str(exc))
        except MigPartedError as exc:
            raise ClusterError(f"{where}: {exc}") from None
    if not per_id:
        unknown = "" if device_ids != (NO_PCI_ID,) else (
            f" ({model} is not in the MIG catalog, so its PCI id is unknown and only entries without "
            f"device-filter can apply)")
        raise ClusterError(f"{where}: {no_entry[0]}{unknown}")
    if len({tuple(layout_resources(r).items()) for r in per_id.values()}) > 1:
        raise ClusterError(f"{where}: config {config} treats the PCI ids of {model} differently "
                           f"({ {k: layout_resources(v) for k, v in per_id.items()} }); the node does not say "
                           f"which one its GPUs have")
    return next(iter(per_id.items()))


def _model(product: str) -> tuple[str, tuple[str, ...], GpuModel | None]:
    """(name shown, PCI ids to evaluate the config for, catalog model or None)."""
    try:
        model = gpu_model(product)
    except UnknownGpuModel:
        return product, (NO_PCI_ID,), None
    return model.key, model.device_ids, model


def expected_for_node(cluster: ClusterFacts, policy_name: str, node: dict, sharing: NodeSharing,
                      product: str, count: int, config: str | None = None) -> NodeMig:
    """Expected allocatable of ``node`` (``count`` GPUs of ``product``, as the profile says) under
    ``config`` (default: the one it carries), from the mig-parted ConfigMap of ClusterPolicy
    ``policy_name``, advertised under the node's MIG strategy and sharing. ClusterError when
    that cannot be told (no ConfigMap, not parseable, no entry for the GPU, ids of the model told
    apart)."""
    spec = (cluster.cluster_policy(policy_name) or {}).get("spec") or {}
    configmap = effective_spec_value(spec, "migManager.config.name")[1]
    shown, device_ids, model = _model(product)
    config = config or _node_config(node, spec)
    where = f"ConfigMap {cluster.operator_namespace}/{configmap}"

    def layouts() -> tuple[str, tuple[MigConfig, ...], dict[str, int] | None]:
        gpu_id, per_gpu = _layouts(cluster.mig_parted_configs(configmap), config, device_ids, count, where, shown)
        try:
            catalog = layout_resources([mig_config(model, config)] * count) if model else None
        except UnknownMigConfig:
            catalog = None
        return gpu_id, per_gpu, catalog
    # the same for every node of one model, GPU count and config: once per run, not once per node
    gpu_id, per_gpu, catalog = cluster.derived(("mig layouts", configmap, config, product, count), layouts)
    devices = layout_resources(per_gpu)
    single_product = None
    if sharing.strategy == "single":
        plain, single_product, _ = single_strategy(per_gpu, product)
    elif sharing.strategy == "none":
        plain = {RESOURCE_GPU: len(per_gpu)} if per_gpu else {}
    else:
        plain = devices
    return NodeMig(nodes.name(node), config, where, shown, gpu_id, count, sharing.advertised(plain), dict(devices),
                   None if catalog is None else dict(catalog), sharing.strategy, single_product)
