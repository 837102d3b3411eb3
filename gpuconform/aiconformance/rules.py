"""The program's validation of a PRODUCT.yaml, offline: the rules of cncf/k8s-ai-conformance
``scripts/validate.go`` (``validateProduct``, read at commit b2c89690e77f, the program's CI runs it
on every submitted PRODUCT.yaml), with its messages:

* the checklist is ``docs/AIConformance-<X.Y>.yaml`` of the ``vX.Y/`` folder in the file's path;
* metadata: every field of ``metadataFields`` present (camelCase or snake_case), a string, not
  empty (``repoUrl`` is optional), no placeholder ``[…]``; ``k8sConformanceUrl`` of the form
  ``https://github.com/cncf/k8s-conformance/tree/(master|main)/vX.Y/<product>``;
* spec: every category and every requirement of the checklist present; a SHOULD with an empty
  status and no evidence is left alone; otherwise the status is one of the four, a MUST is
  ``Implemented``, ``N/A`` has notes; an evidence entry that is not an http(s) URL is a file
  relative to the PRODUCT.yaml's folder, and must exist.

Left out, because they need the network: the reachability of every http(s) URL (metadata and
evidence) and vendorName being a CNCF member in the CNCF landscape."""
from __future__ import annotations

import re
from pathlib import Path

import yaml

from gpuconform.aiconformance.checklist import Checklist

STATUSES = ("Implemented", "Not Implemented", "Partially Implemented", "N/A")

#: validate.go metadataFields: name -> required
METADATA_FIELDS = {"kubernetesVersion": True, "platformName": True, "platformVersion": True, "vendorName": True,
                   "websiteUrl": True, "repoUrl": False, "documentationUrl": True, "productLogoUrl": True,
                   "description": True, "contactEmailAddress": True, "k8sConformanceUrl": True}

K8S_CONFORMANCE_URL = re.compile(r"^https://github\.com/cncf/k8s-conformance/tree/(master|main)/v\d+\.\d+/[^/]+/?$")
_VERSION_IN_PATH = re.compile(r"(?:^|/)(v\d+\.\d+)/")


def snake_case(name: str) -> str:
    """validate.go toSnakeCase."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()


def version_from_path(path: str | Path) -> str | None:
    """``1.34`` from ``…/v1.34/<product>/PRODUCT.yaml``, as validate.go finds the checklist."""
    found = _VERSION_IN_PATH.search(str(path))
    return found.group(1)[1:] if found else None


def placeholder(value: str) -> bool:
    return value.startswith("[") and value.endswith("]")


def metadata_problems(metadata) -> list[str]:
    if not isinstance(metadata, dict):
        return ["Missing 'metadata' section"]
    out = []
    for field, required in METADATA_FIELDS.items():
        snake = snake_case(field)
        value = metadata.get(field, metadata.get(snake))
        if value is None:
            if required:
                out.append(f"Missing metadata field: {field} (or {snake})")
            continue
        if not isinstance(value, str):
            out.append(f"Metadata field {field} is not a string")
        elif value == "":
            if required:
                out.append(f"Metadata field {field} is empty")
        elif placeholder(value):
            out.append(f"Metadata field {field} has placeholder value: {value}")
        elif field == "k8sConformanceUrl" and not K8S_CONFORMANCE_URL.match(value):
            out.append(f"Invalid k8sConformanceUrl format: {value}. Expected format: "
                       "https://github.com/cncf/k8s-conformance/tree/master/v{version}/{product}")
    return out


def spec_problems(spec, checklist: Checklist, product_dir: Path) -> list[str]:
    if not isinstance(spec, dict):
        return ["Missing 'spec' section"]
    out = []
    for category in checklist.categories:
        if category not in spec:
            out.append(f"Missing spec category: {category}")
            continue
        given = {r.get("id"): r for r in spec[category] or () if isinstance(r, dict)}
        for req in (r for r in checklist.requirements if r.category == category):
            entry = given.get(req.id)
            if entry is None:
                out.append(f"Missing requirement '{req.id}' in category '{category}'")
                continue
            status, evidence, notes = entry.get("status") or "", entry.get("evidence") or [], entry.get("notes") or ""
            if req.level == "SHOULD" and status == "" and not evidence:
                continue
            if status not in STATUSES:
                out.append(f"Invalid status '{status}' for '{req.id}'. Must be one of {list(STATUSES)}")
            if req.level == "MUST" and status != "Implemented":
                out.append(f"Requirement '{req.id}' is MUST level but status is '{status}'. It must be 'Implemented'.")
            if status == "N/A" and notes == "":
                out.append(f"Notes required for '{req.id}' when status is N/A")
            for link in evidence:
                if link and not link.startswith(("http://", "https://")) and not (product_dir / link).exists():
                    out.append(f"Invalid evidence file for '{req.id}': {link} (not found at {product_dir / link})")
    return out


def problems(path: str | Path, checklist: Checklist) -> list[str]:
    """What the program's validation says of the PRODUCT.yaml at ``path`` judged by ``checklist``
    (the one of the ``vX.Y/`` folder in its path, when it has one): [] when it passes."""
    path = Path(path)
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        return ["not a YAML mapping"]
    return metadata_problems(doc.get("metadata")) + spec_problems(doc.get("spec"), checklist, path.parent)
