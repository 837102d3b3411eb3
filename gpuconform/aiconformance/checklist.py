"""The checklists of the CNCF Kubernetes AI Conformance program, one per Kubernetes minor version
(``AIConformance-<version>.yaml`` beside this file: the program's files, verbatim below a header citing
their source and commit). A requirement's ``id``, ``description`` and ``level`` go into
PRODUCT.yaml exactly as the checklist has them."""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib.resources import files

import yaml

LEVELS = ("MUST", "SHOULD")


@dataclass(frozen=True)
class Requirement:
    category: str  # the spec key it sits under (accelerators, networking, …)
    id: str
    description: str
    level: str


@dataclass(frozen=True)
class Checklist:
    version: str  # "1.34"
    text: str  # the file as shipped (header and verbatim body)
    kubernetes_version: str  # the checklist's metadata.kubernetesVersion ("v1.34")
    requirements: tuple[Requirement, ...]  # in the checklist's order

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.category for r in self.requirements))

    def ids(self) -> tuple[str, ...]:
        return tuple(r.id for r in self.requirements)


def _folder():
    return files("gpuconform.aiconformance")


def versions() -> tuple[str, ...]:
    """The checklist versions shipped, oldest first."""
    names = [p.name for p in _folder().iterdir() if p.name.startswith("AIConformance-") and p.name.endswith(".yaml")]
    found = [n[len("AIConformance-"):-len(".yaml")] for n in names]
    return tuple(sorted(found, key=lambda v: tuple(int(x) for x in v.split("."))))


def newest() -> str:
    return versions()[-1]


@cache
def load(version: str) -> Checklist:
    """The checklist of ``version`` (one of :func:`versions`)."""
    if version not in versions():
        raise KeyError(f"no AI conformance checklist {version!r} (shipped: {', '.join(versions())})")
    text = _folder().joinpath(f"AIConformance-{version}.yaml").read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    reqs = tuple(Requirement(category, r["id"], r["description"], r["level"])
                 for category, entries in doc["spec"].items() for r in entries)
    return Checklist(version, text, str(doc["metadata"]["kubernetesVersion"]), reqs)


def level(version: str, requirement: str) -> str | None:
    """MUST, SHOULD, or None where the checklist of ``version`` has no such requirement."""
    return next((r.level for r in load(version).requirements if r.id == requirement), None)
