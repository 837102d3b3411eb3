"""The Prometheus text exposition format (the one metrics endpoints serve): samples with their
labels. Comments (# HELP, # TYPE) and blank lines carry no sample."""
from __future__ import annotations

import dataclasses
import re

_SAMPLE = re.compile(r"^(?P<name>[A-Za-z_:][\w:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)")
_LABEL = re.compile(r'\s*([A-Za-z_]\w*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*,?')


@dataclasses.dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: str


def parse_samples(text: str) -> list[Sample]:
    out = []
    for line in text.splitlines():
        m = _SAMPLE.match(line.strip())
        if m and not line.lstrip().startswith("#"):
            labels = {k: bytes(v, "utf-8").decode("unicode_escape") for k, v in _LABEL.findall(m["labels"] or "")}
            out.append(Sample(m["name"], labels, m["value"]))
    return out
