"""``systemctl show -p Id,LoadState,ActiveState,SubState,UnitFileState unit...``: blocks of
Key=Value separated by blank lines."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Unit:
    """One unit as systemd reports it; a unit systemd does not know is ``load_state`` not-found."""
    id: str
    load_state: str = "not-found"
    active_state: str = "inactive"
    sub_state: str = ""
    unit_file_state: str = ""

    @property
    def enabled(self) -> bool:
        """Starts at boot (enabled, or pulled in without an [Install] section)."""
        return self.unit_file_state in ("enabled", "enabled-runtime", "static", "alias")

    def describe(self) -> str:
        """``active (running)``-style text: the active state with its sub-state or load state."""
        text = f"{self.active_state} ({self.sub_state or self.load_state})"
        # a unit systemd cannot find (its package removed) says so, not only "inactive (dead)"
        return text if self.load_state in ("loaded", "") or not self.sub_state else f"{text}, {self.load_state}"


_FIELDS = {"LoadState": "load_state", "ActiveState": "active_state", "SubState": "sub_state",
           "UnitFileState": "unit_file_state"}


def parse_show(text: str) -> dict[str, Unit]:
    units: dict[str, Unit] = {}
    block: dict[str, str] = {}
    for line in text.splitlines() + [""]:
        if not line.strip():
            if block.get("Id"):
                units[block["Id"]] = Unit(block["Id"], **{_FIELDS[k]: v for k, v in block.items() if k in _FIELDS})
            block = {}
            continue
        key, _, value = line.partition("=")
        block[key.strip()] = value.strip()
    return units
