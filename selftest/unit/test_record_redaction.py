"""Redaction at one boundary (issue #26): every string of a record goes through ``redact`` where
the record is made (report/record.py ``build``), whichever field holds it. The fields are found by
introspection, of the record built and of the documented model (report/model.py ``Record``): a
field added later is covered without touching this test, and the test fails if it is not
redacted."""
from __future__ import annotations

import json
import types

import pytest

from gpuconform.report import record as rec
from gpuconform.redact import MASK, redact
from gpuconform.report.model import Record

#: a secret of a shape redact knows, in every text a record can be made from
PASSWORD = "Hunter2Hunter2-s3cr3t"
TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2"
SECRET = f"password={PASSWORD} {TOKEN}"


def _failed_call(text: str) -> pytest.CallInfo:
    def fail():
        raise AssertionError(text)
    return pytest.CallInfo.from_call(fail, when="call")


def _a_record_from_secrets() -> dict:
    """A failed check's record whose every input carries :data:`SECRET`."""
    def check():
        pass
    check.__doc__ = f"the rule, quoting {SECRET}"
    item = types.SimpleNamespace(
        callspec=types.SimpleNamespace(params={"cfg": f"https://robot:{PASSWORD}@registry.example"}),
        function=check, stash={}, nodeid=f"tests/node/test_x.py::test_x[{TOKEN}]")
    report = types.SimpleNamespace(passed=False, skipped=False, failed=True, when="call", duration=0.25)
    mark = types.SimpleNamespace(kwargs={"id": f"node.x.{TOKEN}", "title": f"title {SECRET}", "evidence": ("s",)})
    facts = types.SimpleNamespace(host=f"gpu-1 {SECRET}", evidence=lambda *names: f"$ cat /etc/x\n{SECRET}")
    return rec.build(item, _failed_call(f"expected x, got {SECRET}"), report, mark, facts,
                     f"sudo fix --{SECRET}", f"node {TOKEN}", [f"--- seen ---\n{SECRET}"])


def _strings(value, path="") -> list[tuple[str, str]]:
    if isinstance(value, str):
        return [(path, value)]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in _strings(v, f"{path}.{k}")]
    if isinstance(value, (list, tuple)):
        return [s for i, v in enumerate(value) for s in _strings(v, f"{path}[{i}]")]
    return []


@pytest.fixture(autouse=True)
def _fresh_memory():
    rec._masked.cache_clear()
    yield
    rec._masked.cache_clear()


def test_the_record_has_the_documented_fields():
    """The record made is the model's record: a field added to either is a field of both, and so
    one the tests below check."""
    assert set(_a_record_from_secrets()) == {f.alias or name for name, f in Record.model_fields.items()}


def test_no_secret_survives_in_any_field():
    record = _a_record_from_secrets()
    carrying = [path for path, text in _strings(record) if PASSWORD in text or TOKEN in text]
    assert carrying == [], f"record fields that kept a secret: {carrying}"
    dumped = json.dumps(record)
    assert PASSWORD not in dumped and TOKEN not in dumped
    for field in ("message", "evidence", "remediation", "title", "rule", "param", "host", "nodeid"):
        assert MASK in record[field], field


def test_every_string_field_goes_through_redact(monkeypatch):
    """Whatever a field holds, the record's strings are all ``redact``'s output: with ``redact``
    replaced by one that marks what it returns, every string of the record carries the mark."""
    monkeypatch.setattr(rec, "redact", lambda text, *extra: f"<masked>{text}")
    record = _a_record_from_secrets()
    strings = _strings(record)
    string_fields = {path.split(".")[1].split("[")[0] for path, _ in strings}
    model_strings = {name for name, f in Record.model_fields.items() if "str" in str(f.annotation)}
    assert model_strings <= string_fields | {name for name in model_strings if record[name] is None}
    unmarked = [path for path, text in strings if not text.startswith("<masked>")]
    assert unmarked == [], f"record strings that did not go through redact: {unmarked}"


def test_summaries_and_platform_fields_are_redacted():
    """What else a test report carries to the reports goes through the same function."""
    carried = rec.redacted({"host": f"gpu-1 {SECRET}", "gpus": [{"name": TOKEN}], "n": 3})
    assert PASSWORD not in json.dumps(carried) and TOKEN not in json.dumps(carried) and carried["n"] == 3


def _secret_texts() -> list[str]:
    """Every text of selftest/unit/test_redact.py's parametrized cases (``text, ...``)."""
    import inspect

    from selftest.unit import test_redact
    texts = []
    for _, fn in inspect.getmembers(test_redact, inspect.isfunction):
        for mark in getattr(fn, "pytestmark", []):
            if mark.name == "parametrize" and str(mark.args[0]).replace(" ", "").startswith("text,"):
                texts += [case[0] for case in mark.args[1] if isinstance(case, tuple) and isinstance(case[0], str)]
    return texts


def test_redacting_twice_changes_nothing_more():
    """A record's text may have been redacted before (a host's evidence, a check's own secrets):
    the boundary's pass must leave masked text as it is."""
    texts = _secret_texts()
    assert len(texts) > 20, len(texts)
    changed = [(t, redact(t), redact(redact(t))) for t in texts if redact(redact(t)) != redact(t)]
    assert changed == []
