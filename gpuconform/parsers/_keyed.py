"""Typed results that also read by the tool's own key (``row["mig.mode.current"]``, ``row.get("uuid")``):
the key is the attribute's name with dots for underscores. Callers outside the node layer (the
report's fingerprint, the cluster layer's pod logs) read results that way."""
from __future__ import annotations

from typing import Any


class Keyed:
    def __getitem__(self, key: str) -> Any:
        try:
            return getattr(self, key.replace(".", "_"))
        except AttributeError:
            raise KeyError(key) from None

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default
