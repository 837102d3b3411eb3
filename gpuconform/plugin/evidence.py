"""What a check saw, shown with its result: the one evidence type of the cluster and kubeflow
layers (node checks name fact sections instead, ``@check(evidence=[...])``).

Text is redacted again where the record is made (report/record.py); ``secrets`` (e.g. the
Kubeflow test passwords) are masked here, before the text is stored.
"""
from __future__ import annotations

import pytest

from gpuconform.plugin import keys
from gpuconform.redact import redact


class Evidence:
    """Evidence of the check ``item``; with ``item`` None (a prerequisite evaluated for the gate),
    nothing is kept: it is not this check's to show."""

    def __init__(self, item: pytest.Item | None, secrets: tuple[str, ...] = ()):
        self.item = item
        self.secrets = secrets

    def add(self, title: str, text: str) -> None:
        if self.item is None:
            return
        text = redact(text, self.secrets) if self.secrets else text
        self.item.stash.setdefault(keys.EVIDENCE, []).append(f"--- {title} ---\n{text.rstrip()}")


DISCARD = Evidence(None)
