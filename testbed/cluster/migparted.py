"""The simulated nodes' mig-parted: which MIG devices a named config creates on each GPU.

Behaviour of NVIDIA/mig-parted, not its code:
* the file is ``version: v1`` with ``mig-configs: {name: [spec, ...]}`` (api/spec/v1/spec.go);
  the ConfigMap the GPU Operator deploys holds it under ``config.yaml``
  (gpu-operator assets/state-mig-manager/0400_configmap.yaml);
* a selected name that is absent fails ("selected mig-config not present",
  cmd/nvidia-mig-parted/assert/assert.go GetSelectedMigConfig);
* every spec is walked in order and applied to each GPU whose PCI id matches its
  ``device-filter`` (a string or a list; none = every GPU) and whose index matches ``devices``
  (``all`` or a list of indexes) -- a later spec overrides an earlier one on the same GPU, a GPU no
  spec matches keeps its layout (WalkSelectedMigConfigForEachGPU; api/spec/v1/helpers.go);
* a MIG-enabled spec on a GPU that cannot hold its devices fails ("error setting MIGConfig",
  cmd/nvidia-mig-parted/apply/config.go); a non-MIG-capable GPU is skipped for ``devices: all``.
"""
from __future__ import annotations

import yaml

from testbed.cluster.hardware import Gpu, fits

#: per GPU: None = MIG disabled (the whole GPU), else {profile: count} of MIG devices
Layout = list


class MigPartedError(Exception):
    pass


def load(config_yaml: str) -> dict[str, list[dict]]:
    try:
        doc = yaml.safe_load(config_yaml) or {}
    except yaml.YAMLError as exc:
        raise MigPartedError(f"error parsing config file: unmarshal error: {exc}") from None
    configs = doc.get("mig-configs") if isinstance(doc, dict) else None
    if doc.get("version") != "v1" or not isinstance(configs, dict):
        raise MigPartedError("error parsing config file: not a v1 mig-parted config with mig-configs")
    return configs


def _matches(spec: dict, gpu: Gpu, index: int) -> bool:
    flt = spec.get("device-filter") or []
    flt = [flt] if isinstance(flt, str) else flt
    if flt and gpu.device_id.lower() not in {f.lower() for f in flt}:
        return False
    devices = spec.get("devices")
    return devices == "all" or (isinstance(devices, list) and index in devices)


def apply(configs: dict[str, list[dict]], selected: str, gpu: Gpu, current: Layout) -> Layout:
    """The layout after applying ``selected`` to GPUs of model ``gpu`` that have ``current``."""
    if selected not in configs:
        raise MigPartedError(f"error selecting MIG config: selected mig-config not present: {selected}")
    layout = list(current)
    for spec in configs[selected] or []:
        for i in range(len(layout)):
            if not _matches(spec, gpu, i):
                continue
            if not spec.get("mig-enabled"):
                layout[i] = None
                continue
            if not gpu.mig_profiles:
                if spec.get("devices") == "all":
                    continue
                raise MigPartedError("cannot set MIG config on non MIG-capable GPU")
            devices = {str(k): int(v) for k, v in (spec.get("mig-devices") or {}).items()}
            why = fits(gpu, devices)
            if why:
                raise MigPartedError(f"error setting MIGConfig: {why}")
            layout[i] = devices
    return layout
