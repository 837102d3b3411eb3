"""The node topics (issue #26): each concern of a host declared in one module, and everything built
from them consistent — no probe step or companion declared twice (one would silently replace the
other), every check's words used by exactly one check in tests/node/, every evidence a real step,
every companion script a file of remediation/."""
from __future__ import annotations

import ast
from pathlib import Path

from gpuconform.node import probe, remediation, topics
from gpuconform.node.facts import NodeFacts

REPO = Path(__file__).resolve().parents[2]


def test_each_topic_declares_its_parts():
    for t in topics.TOPICS:
        assert isinstance(t.STEPS, tuple) and isinstance(t.TOOLS, tuple) and isinstance(t.COMPANIONS, dict), t.__name__
        assert issubclass(NodeFacts, t.Facts), t.__name__


def test_no_step_and_no_companion_is_declared_twice():
    steps = [s.name for s in probe.STEPS]
    assert len(steps) == len(set(steps)), sorted(n for n in steps if steps.count(n) > 1)
    ids = [cid for t in topics.TOPICS for cid in t.COMPANIONS]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_no_fact_is_declared_by_two_topics():
    owners: dict[str, list[str]] = {}
    for t in topics.TOPICS:
        for name in vars(t.Facts):
            if not name.startswith("__"):
                owners.setdefault(name, []).append(t.__name__)
    assert not {n: o for n, o in owners.items() if len(o) > 1}


def _texts() -> dict[str, dict]:
    """``topic.NAME`` → the check's words, for every check text a topic declares."""
    return {f"{t.__name__.rsplit('.', 1)[1]}.{name}": value for t in topics.TOPICS
            for name, value in vars(t).items() if name.isupper() and isinstance(value, dict) and "title" in value}


def _spread_in_checks() -> list[str]:
    """``topic.NAME`` of every ``@check(id, **topic.NAME)`` in tests/node/."""
    used = []
    for path in sorted((REPO / "tests/node").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "check":
                for kw in node.keywords:
                    if kw.arg is None and isinstance(kw.value, ast.Attribute):
                        used.append(f"{kw.value.value.id}.{kw.value.attr}")
    return used


def test_every_checks_words_are_used_by_one_check_and_name_real_steps():
    texts, used = _texts(), _spread_in_checks()
    wrong = sorted(u for u in used if used.count(u) > 1 or u not in texts)
    assert sorted(used) == sorted(texts), f"unused: {sorted(set(texts) - set(used))}; unknown or twice: {wrong}"
    for name, text in texts.items():
        assert text["title"] and text["fix"], name
        unknown = [e for e in text["evidence"] if e not in probe.BY_NAME]
        assert not unknown, f"{name}: evidence names no probe step: {unknown}"


def test_companions_are_scripts_of_remediation_in_their_order():
    for cid, companion in remediation.COMPANIONS.items():
        assert (REPO / "remediation" / companion.script).is_file(), f"{cid}: {companion.script}"
    assert set(remediation.ORDER) == {c.script for c in remediation.COMPANIONS.values()}
    # the kernel headers and the linker before the DKMS build that needs them
    assert remediation.ORDER.index("kernel-headers.sh") < remediation.ORDER.index("dkms-install.sh")
    assert remediation.ORDER.index("fix-ld.sh") < remediation.ORDER.index("dkms-install.sh")
