"""``dcgmi diag -j``: DCGM's diagnostic results as JSON. DCGM 3.x nests them under "DCGM GPU
Diagnostic" with each test's per-GPU ``results[].status``; 4.x renamed the key "DCGM Diagnostic"
and adds ``test_summary.status`` (NVIDIA/DCGM issue #139's output; the 4.x change as its
release notes and facebookresearch/gcm#38 describe it)."""
from __future__ import annotations

import dataclasses
import json


@dataclasses.dataclass(frozen=True)
class DiagResult:
    category: str
    test: str
    gpu: str | None          # None: the test's summary over all GPUs
    status: str              # Pass, Fail, Warn, Skip
    info: str = ""


def parse_diag(text: str) -> list[DiagResult]:
    """Every (test, GPU) result; ValueError when the text is not a diagnostic's JSON."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    body = doc.get("DCGM GPU Diagnostic") or doc.get("DCGM Diagnostic") if isinstance(doc, dict) else None
    if not isinstance(body, dict) or not isinstance(body.get("test_categories"), list):
        raise ValueError("no test_categories under 'DCGM GPU Diagnostic' / 'DCGM Diagnostic'")
    out = []
    for category in body["test_categories"]:
        for test in category.get("tests") or []:
            name = str(test.get("name", "?"))
            for r in test.get("results") or []:
                info = r.get("info") or r.get("warnings") or ""
                if isinstance(info, list):
                    info = "; ".join(str(i.get("warning", i)) if isinstance(i, dict) else str(i) for i in info)
                out.append(DiagResult(str(category.get("category", "?")), name,
                                      None if r.get("gpu_id") is None else str(r.get("gpu_id")),
                                      str(r.get("status", "?")), str(info)))
            summary = test.get("test_summary") or {}
            if summary.get("status") and not test.get("results"):
                out.append(DiagResult(str(category.get("category", "?")), name, None, str(summary["status"])))
    return out
