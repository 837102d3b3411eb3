"""The strict YAML loader (gpuconform/yamlparse.py) on both of PyYAML's parsers: libyaml's, which
the suite uses where PyYAML has it, and PyYAML's own. Both read every shipped profile alike and
refuse the same documents, with the same words."""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest
import yaml

from gpuconform import yamlparse

REPO = Path(__file__).resolve().parents[2]
DOCUMENTS = sorted((REPO / "profiles").glob("*.yaml")) + sorted((REPO / "gpuconform" / "profiles").glob("*.yaml"))

REFUSED = [
    ("name: t\nx: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 64 levels deep"),
    ("name: t\n" + "".join(" " * i + f"k{i}:\n" for i in range(2000)), "nested more than 64 levels deep"),
    ("x: " + "[" * 63 + "1" + "]" * 63 + "\n", "nested more than 64 levels deep"),
    ("name: t\na0: &a0 [x, x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, 30)),
     "aliases expand to more than 200000 nodes"),
    ("name: &a [*a]\n", "an alias that contains itself"),
    ("a:\n  x: 1\n  x: 2\n", "duplicate key 'x'"),
    ("d: 2026-13-45\n", "'2026-13-45' is not a date"),
]


@pytest.fixture(params=["libyaml", "pyyaml"])
def parser(request, monkeypatch):
    """yamlparse built on one parser; put back as it was after the test."""
    if request.param == "libyaml" and not hasattr(yaml, "CSafeLoader"):
        pytest.fail("PyYAML here is built without libyaml: the suite's fast parser is missing")
    if request.param == "pyyaml":
        monkeypatch.delattr(yaml, "CSafeLoader")
    yield importlib.reload(yamlparse)
    monkeypatch.undo()
    importlib.reload(yamlparse)


def test_both_parsers_read_every_shipped_profile_alike(parser):
    assert DOCUMENTS
    for path in DOCUMENTS:
        raw = path.read_bytes()
        assert parser.load(raw) == yaml.load(raw, Loader=yaml.SafeLoader), path  # noqa: S506


def test_a_document_at_the_depth_bound_is_read(parser):
    """The top mapping, 62 lists and the scalar: 64 levels."""
    value = parser.load("x: " + "[" * 62 + "1" + "]" * 62 + "\n")["x"]
    for _ in range(62):
        assert isinstance(value, list) and len(value) == 1
        value = value[0]
    assert value == 1


@pytest.mark.parametrize("text, words", REFUSED, ids=[w[:20] + str(i) for i, (_, w) in enumerate(REFUSED)])
def test_both_parsers_refuse_alike(parser, text, words):
    with pytest.raises(yaml.MarkedYAMLError) as caught:
        parser.load(text)
    assert words in str(caught.value.problem) and caught.value.problem_mark is not None
