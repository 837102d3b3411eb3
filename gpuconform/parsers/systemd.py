"""``systemctl show -p ... unit...``: blocks of Key=Value separated by blank lines."""
from __future__ import annotations


def parse_show(text: str) -> dict[str, dict[str, str]]:
    units: dict[str, dict[str, str]] = {}
    block: dict[str, str] = {}
    for line in text.splitlines() + [""]:
        if not line.strip():
            if block.get("Id"):
                units[block["Id"]] = block
            block = {}
            continue
        key, _, value = line.partition("=")
        block[key.strip()] = value.strip()
    return units
