"""GPU platforms as real sites build them, each a healthy point of the space NVIDIA's code allows:
the nodes the platform team racks and labels, and the Helm values it installs NVIDIA's stack
with. What follows from them -- labels, allocatable, operands, MIG state -- comes from NVIDIA's
real GPU Operator controller and the simulated operands (nodeagent.py), never from the suite.

=================  ============================================================================
site               what the site chose
=================  ============================================================================
mig-mixed          the article's: H100x8, MIG mixed, one MIG config per worker
mig-single         MIG single (a uniform layout per node: all-1g.10gb, all-3g.40gb, disabled)
no-mig             the chart's defaults (mig.strategy single), no node labelled for MIG: the
                   operator labels them all-disabled (controllers/state_manager.go)
time-slicing       no MIG, devicePlugin.config naming a ConfigMap with
                   sharing.timeSlicing.resources [{name: nvidia.com/gpu, replicas: 4}]
                   (NVIDIA's documented time-slicing ConfigMap)
no-mig-manager     migManager.enabled=false: MIG-capable H100s, no MIG manager
l40s               GPUs without MIG (4x L40S per node): no MIG manager, no mig.config
device-plugin      no GPU Operator: the nvidia-device-plugin chart (device plugin + GFD) of
                   NVIDIA/k8s-device-plugin, its defaults (MIG strategy none)
=================  ============================================================================
"""
from __future__ import annotations

import dataclasses

from testbed.cluster.hardware import L40S
from testbed.cluster.nodes import ARTICLE_WORKERS, GpuWorker


@dataclasses.dataclass(frozen=True)
class Site:
    name: str
    workers: tuple[GpuWorker, ...]
    stack: str = "gpu-operator"   #: gpu-operator | device-plugin
    values: dict = dataclasses.field(default_factory=dict)   #: Helm values (over the article's for the operator)
    objects: tuple[dict, ...] = ()   #: what the admin creates before installing (ConfigMaps)


def _workers(*configs, gpu: str | None = None, count: int = 8) -> tuple[GpuWorker, ...]:
    extra = {"gpu": gpu} if gpu else {}
    return tuple(GpuWorker(f"gpu-worker-{i}", c, gpu_count=count, **extra) for i, c in enumerate(configs, 1))


#: NVIDIA's time-slicing example (gpu-operator docs "Time-Slicing GPUs in Kubernetes"; the
#: config format of k8s-device-plugin api/config/v1): one config, ``any``, 4 replicas per GPU.
TIME_SLICING_CONFIG = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "time-slicing-config", "namespace": "gpu-operator"},
    "data": {"any": "version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n"
                    "    - name: nvidia.com/gpu\n      replicas: 4\n"},
}

SITES: dict[str, Site] = {s.name: s for s in (
    Site("mig-mixed", ARTICLE_WORKERS),
    Site("mig-single", _workers("all-1g.10gb", "all-3g.40gb", "all-disabled"), values={"mig": {"strategy": "single"}}),
    Site("no-mig", _workers(None, None, None), values={"mig": {"strategy": "single"}}),
    Site("time-slicing", _workers(None, None, None),
         values={"mig": {"strategy": "single"}, "devicePlugin": {"config": {"name": "time-slicing-config",
                                                                           "default": "any"}}},
         objects=(TIME_SLICING_CONFIG,)),
    Site("no-mig-manager", _workers(None, None, None),
         values={"mig": {"strategy": "single"}, "migManager": {"enabled": False}}),
    Site("l40s", _workers(None, None, None, gpu=L40S.product_label, count=4), values={"mig": {"strategy": "single"}}),
    Site("device-plugin", _workers(None, None, None), stack="device-plugin"),
)}
