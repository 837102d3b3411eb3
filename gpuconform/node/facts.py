"""Typed node facts, read from one probe of the host.

:class:`NodeFacts` is the facts of every node topic (:mod:`gpuconform.node.topics`) joined: each
accessor is declared once, in the topic of its concern, and hands one probe section to the parser
of its format (:mod:`gpuconform.parsers`), once per host (``cached_property``). This module adds
what every check shows: the evidence, the commands behind the sections and what they printed.
An accessor either returns a value or raises ``CannotTell`` with the reason the fact could not be
read (tool missing, file unreadable, probe timed out). "Cannot tell" is never "false".
"""
from __future__ import annotations

from gpuconform.errors import CannotTell  # noqa: F401 - the node layer's facts raise it (checks import it here)
from gpuconform.node import probe, topics
from gpuconform.node.topics.system import FIELD_BYTES, clip  # noqa: F401 - one clip for the node layer
from gpuconform.redact import redact

__all__ = ["CannotTell", "NodeFacts", "clip", "FIELD_BYTES", "EVIDENCE_BYTES"]


_EVIDENCE_LINES = 40
#: at most this much of a section's text is shown: a 5 MB file must not make a 20 MB report
EVIDENCE_BYTES = 16 << 10


class NodeFacts(*topics.FACTS):
    """Everything the node checks need to know about one host: the facts of every topic."""

    def evidence(self, *names: str) -> str:
        """The commands behind ``names`` and what they printed, trimmed and redacted."""
        shown = self.__dict__.setdefault("_shown", {})  # per section, redacted once per host
        for name in names:
            if name not in shown:
                shown[name] = self._section_evidence(name)
        return "\n\n".join(shown[name] for name in names if shown[name])

    def _section_evidence(self, name: str) -> str:
        sec = self.sections.get(name)
        if sec is None:
            return ""
        text = "\n".join(x for x in (sec.out, sec.err) if x)
        lines = text.splitlines()
        if len(lines) > _EVIDENCE_LINES:
            lines = lines[:_EVIDENCE_LINES] + [f"... ({len(lines) - _EVIDENCE_LINES} more lines)"]
        status = f"timed out after {sec.timed_out_s} s" if sec.timed_out_s is not None else f"exit {sec.rc}"
        shown = probe.BY_NAME[name].shown if name in probe.BY_NAME else name
        return clip(redact(f"$ {shown}   [{status}]\n" + "\n".join(lines)), EVIDENCE_BYTES)
