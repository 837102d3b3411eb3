"""NVIDIA mig-parted's config file (the ``config.yaml`` of the GPU Operator's mig-parted
ConfigMap) read as the MIG manager reads it, and the layout it gives each GPU of a node.

The format and its meaning, as NVIDIA/mig-parted defines them:

* ``api/spec/v1/spec.go``: ``version: v1`` and a non-empty ``mig-configs`` map, nothing else;
  each config a non-empty list of entries with the required ``devices`` (``all`` or a list of
  GPU indexes) and ``mig-enabled``, optional ``device-filter`` (one PCI id string or a list)
  and ``mig-devices`` (profile -> count; required when MIG is enabled, empty when it is not);
  any other field is refused.
* ``api/spec/v1/helpers.go`` and ``pkg/types/device.go``: an entry applies to a GPU when its
  device filter is empty or names the GPU's id (``0x233010DE`` = device 0x2330, vendor 0x10DE,
  read as a number; ``<id>:<subsystem id>`` also requires the subsystem), and ``devices`` is
  ``all`` or lists the GPU's index.
* ``cmd/nvidia-mig-parted/assert/assert.go`` (WalkSelectedMigConfigForEachGPU): the entries are
  applied in order to every GPU they match, so the last matching entry is what a GPU ends with;
  a GPU no entry matches is left as it was.

This module is library code: it is handed the text and ids; it reads no file or cluster.
"""
from __future__ import annotations

import dataclasses
from typing import Mapping

import yaml

from gpuconform.mig.catalog import MigConfig


class MigPartedError(ValueError):
    """The config text is not a config mig-parted accepts, or it cannot say what a GPU gets."""


class NoEntry(MigPartedError):
    """No entry of the config applies to a GPU: mig-parted leaves that GPU as it is."""


@dataclasses.dataclass(frozen=True)
class Entry:
    """One entry of a named config."""

    device_filter: tuple[str, ...]   #: PCI ids as written; empty: every GPU
    devices: str | tuple[int, ...]   #: ``all`` or GPU indexes
    mig_enabled: bool
    mig_devices: Mapping[str, int]


_ENTRY_FIELDS = {"device-filter", "devices", "mig-enabled", "mig-devices"}


def device_id(text: str) -> tuple[int, int | None]:
    """``0x233010DE`` -> (0x233010DE, None); ``0x233010DE:0x16C110DE`` -> (…, 0x16C110DE)."""
    primary, _, sub = str(text).partition(":")
    try:
        return int(primary, 0), (int(sub, 0) if sub else None)
    except ValueError:
        raise MigPartedError(f"device id {text!r} is not a number like 0x233010DE") from None


def _entry(config: str, i: int, raw) -> Entry:
    where = f"mig-configs.{config}[{i}]"
    if not isinstance(raw, dict):
        raise MigPartedError(f"{where}: an entry must be a mapping, got {raw!r}")
    if unknown := set(raw) - _ENTRY_FIELDS:
        raise MigPartedError(f"{where}: unexpected field {sorted(unknown)[0]}")
    if missing := [f for f in ("devices", "mig-enabled") if f not in raw]:
        raise MigPartedError(f"{where}: missing required field {missing[0]}")
    filt = raw.get("device-filter") or ()
    filt = (filt,) if isinstance(filt, str) else filt
    if not isinstance(filt, (list, tuple)) or not all(isinstance(f, str) for f in filt):
        raise MigPartedError(f"{where}.device-filter: a PCI id string or a list of them, got {filt!r}")
    for f in filt:
        device_id(f)
    devices = raw["devices"]
    if devices != "all" and not (isinstance(devices, list) and all(type(d) is int for d in devices)):
        raise MigPartedError(f"{where}.devices: 'all' or a list of GPU indexes, got {devices!r}")
    enabled, mig_devices = raw["mig-enabled"], raw.get("mig-devices")
    if not isinstance(enabled, bool):
        raise MigPartedError(f"{where}.mig-enabled: true or false, got {enabled!r}")
    if enabled and mig_devices is None:
        raise MigPartedError(f"{where}: missing required field 'mig-devices' when 'mig-enabled' is true")
    if not enabled and mig_devices:
        raise MigPartedError(f"{where}: MIG devices included when 'mig-enabled' is false")
    if not isinstance(mig_devices or {}, dict) or not all(
            isinstance(k, str) and type(v) is int and v >= 0 for k, v in (mig_devices or {}).items()):
        raise MigPartedError(f"{where}.mig-devices: profile -> count, got {mig_devices!r}")
    return Entry(tuple(filt), "all" if devices == "all" else tuple(devices), enabled, dict(mig_devices or {}))


def parse(text: str) -> dict[str, tuple[Entry, ...]]:
    """The named configs of a mig-parted ``config.yaml``; :class:`MigPartedError` (one line)
    where mig-parted would refuse it."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise MigPartedError(f"not YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict) or doc.get("version") != "v1":
        raise MigPartedError(f"version must be v1, got {doc.get('version') if isinstance(doc, dict) else doc!r}")
    if unknown := set(doc) - {"version", "mig-configs"}:
        raise MigPartedError(f"unexpected field: {sorted(unknown)[0]}")
    configs = doc.get("mig-configs")
    if not isinstance(configs, dict) or not configs:
        raise MigPartedError("at least one entry in 'mig-configs' is required")
    out = {}
    for name, entries in configs.items():
        if not isinstance(entries, list) or not entries:
            raise MigPartedError(f"at least one entry in {name!r} is required")
        out[str(name)] = tuple(_entry(name, i, e) for i, e in enumerate(entries))
    return out


def _matches(entry: Entry, gpu_id: int, index: int) -> bool:
    """Whether ``entry`` applies to GPU ``index`` with PCI id ``gpu_id`` (no subsystem known:
    a subsystem-qualified filter naming this id cannot be decided)."""
    if entry.devices != "all" and index not in entry.devices:
        return False
    if not entry.device_filter:
        return True
    ids = [device_id(f) for f in entry.device_filter]
    if any(primary == gpu_id and sub is not None for primary, sub in ids):
        raise MigPartedError(f"device-filter {list(entry.device_filter)} names a subsystem id; the node "
                             f"does not say its GPUs' subsystem")
    return any(primary == gpu_id for primary, _ in ids)


def gpu_layouts(configs: Mapping[str, tuple[Entry, ...]], name: str, gpu_id: str, gpu_count: int) -> list[MigConfig]:
    """What each of ``gpu_count`` GPUs with PCI id ``gpu_id`` ends with under config ``name``:
    the last entry that matches it."""
    if name not in configs:
        raise MigPartedError(f"no config {name!r} (it has {len(configs)}: {', '.join(sorted(configs)[:8])}"
                             f"{', ...' if len(configs) > 8 else ''})")
    wanted, _ = device_id(gpu_id)
    out = []
    for index in range(gpu_count):
        last = None
        for entry in configs[name]:
            if _matches(entry, wanted, index):
                last = entry
        if last is None:
            raise NoEntry(f"config {name!r} has no entry for GPU {index} ({gpu_id}): mig-parted leaves it as it is")
        out.append(MigConfig(name, last.mig_enabled, dict(last.mig_devices)))
    return out
