"""Check ids, in the spirit of Tempest's check-uuid: every id is declared once, as a literal;
every ``needs`` names a declared id, as a literal (one grep finds every use); every id the
READMEs' tables, the docs and the companion scripts' headers write is a real check; the
registry itself refuses a duplicate, and the gate an unknown prerequisite."""
from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

import pydantic
import pytest

from gpuconform import checks
from gpuconform.plugin.gating import Gate

REPO = Path(__file__).resolve().parents[2]
CHECK_FILES = sorted((REPO / "tests").rglob("test_*.py"))
#: every Markdown file of the repository (the READMEs, docs/), .md files git does not track left out
DOCS = sorted(p for p in REPO.rglob("*.md") if not any(part.startswith(".") or part in ("reports", "build") or
                                                       part.endswith(".egg-info") for part in p.relative_to(REPO).parts))
#: an id as written in prose: layer, then dotted lower-case parts; a parameter may follow in [...]
ID_TOKEN = re.compile(r"(?<![\w.$/-])((?:node|cluster|kubeflow)(?:\.[a-z0-9_]+)+)(\.\*)?(?![\w/-])")
#: a continuation that cannot be grepped: "node.gpu.count / .product"
SHORTHAND = re.compile(r"(?:\s/|,)\s*`?\.[a-z_]+")
#: a file name such as `node.py` is no id
FILE_SUFFIXES = {"py", "yaml", "yml", "json", "md", "sh", "html", "xml"}


def _declarations() -> list[tuple[str, ast.Call]]:
    """(file:line, the @check(...) call) of every check."""
    out = []
    for path in CHECK_FILES:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef):
                for deco in node.decorator_list:
                    if isinstance(deco, ast.Call) and getattr(deco.func, "id", None) == "check":
                        out.append((f"{path.relative_to(REPO)}:{deco.lineno}", deco))
    return out


DECLARED = _declarations()


def _literal(node: ast.expr) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _ids() -> dict[str, list[str]]:
    ids: dict[str, list[str]] = {}
    for where, call in DECLARED:
        ids.setdefault(_literal(call.args[0]) or f"<not a literal at {where}>", []).append(where)
    return ids


IDS = _ids()


def _needs() -> list[tuple[str, ast.expr]]:
    return [(where, elt) for where, call in DECLARED for kw in call.keywords if kw.arg == "needs"
            for elt in (kw.value.elts if isinstance(kw.value, (ast.List, ast.Tuple)) else [kw.value])]


def test_every_check_id_is_a_literal_and_unique():
    assert len(DECLARED) > 50
    not_literal = [w for w, call in DECLARED if not call.args or _literal(call.args[0]) is None]
    assert not not_literal, f"@check id not a string literal at {not_literal}"
    twice = {i: where for i, where in IDS.items() if len(where) > 1}
    assert not twice, f"check ids declared more than once: {twice}"


def test_needs_are_literals_that_resolve():
    needs = _needs()
    assert needs
    not_literal = [w for w, elt in needs if _literal(elt) is None]
    assert not not_literal, f"needs= must list literal ids (one grep finds every use), not names, at {not_literal}"
    unknown = [(w, _literal(elt)) for w, elt in needs if _literal(elt) not in IDS]
    assert not unknown, f"needs= names ids no check declares: {unknown}"


def _profile_path(token: str) -> bool:
    """Whether ``token`` names a field of the profile (``kubeflow.ingress``), not a check."""
    from gpuconform import profile
    section, *parts = token.split(".")
    model: object = {"node": getattr(profile, "NodeExpectations", None), "cluster": profile.ClusterExpectations,
                     "kubeflow": profile.KubeflowExpectations}[section]
    for part in parts:
        fields = getattr(model, "model_fields", None)
        if fields is None or part not in fields:
            return False
        annotation = fields[part].annotation
        model = next((a for a in (annotation, *typing.get_args(annotation))
                      if isinstance(a, type) and issubclass(a, pydantic.BaseModel)), None)
    return True


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(REPO)) for d in DOCS])
def test_ids_in_tables_exist_and_can_be_grepped(doc: Path):
    rows = [(n, line) for n, line in enumerate(doc.read_text().splitlines(), 1) if line.startswith("|")]
    bad = []
    for n, line in rows:
        bad += [f"{doc.name}:{n}: shorthand '{m.group(0).strip()}' (write the whole id)" for m in SHORTHAND.finditer(line)]
        for m in ID_TOKEN.finditer(line):
            token = m.group(1)
            if token.rsplit(".", 1)[1] in FILE_SUFFIXES:
                continue
            if m.group(2):
                bad.append(f"{doc.name}:{n}: {token}.* (name the checks)")
            elif token not in IDS and not _profile_path(token):
                bad.append(f"{doc.name}:{n}: {token} is no check id")
    assert not bad, "\n".join(bad)


def test_companion_scripts_name_real_checks():
    scripts = sorted((REPO / "remediation").glob("*.sh"))
    named = {}
    for script in scripts:
        header = re.search(r"^# Fixes: (.*(?:\n#\s{2,}.*)*)", script.read_text(), re.M)
        if header:
            named[script.name] = [m.group(1) for m in ID_TOKEN.finditer(header.group(1))]
    assert len(named) >= len(scripts) - 1, f"scripts without a '# Fixes:' header: {sorted(s.name for s in scripts if s.name not in named)}"
    assert all(named.values()), f"'# Fixes:' headers naming no check: {[s for s, ids in named.items() if not ids]}"
    unknown = {s: [i for i in ids if i not in IDS] for s, ids in named.items()}
    assert not any(unknown.values()), f"companion scripts name ids no check declares: {unknown}"
    from gpuconform.node.remediation import COMPANIONS
    assert not set(COMPANIONS) - set(IDS), f"companions of unknown checks: {sorted(set(COMPANIONS) - set(IDS))}"


def test_registry_refuses_a_second_check_with_a_taken_id(monkeypatch):
    monkeypatch.setattr(checks, "REGISTRY", {})
    checks.check("x.y.first", "first")(lambda node: None)
    with pytest.raises(checks.CheckIdError, match="check id x.y.first of .* is already taken by"):
        checks.check("x.y.first", "second")(lambda node, expected: None)


def test_unknown_prerequisites_are_named_and_never_pass(monkeypatch):
    monkeypatch.setattr(checks, "REGISTRY", {})
    monkeypatch.setattr("gpuconform.plugin.gating.REGISTRY", checks.REGISTRY)
    checks.check("x.y.base", "base")(lambda node: None)
    checks.check("x.y.upper", "upper", needs=["x.y.bsae"])(lambda node: None)
    assert checks.unknown_needs() == ["x.y.upper needs x.y.bsae"]
    with pytest.raises(checks.CheckIdError, match="prerequisite x.y.bsae is not a loaded check"):
        Gate().blocker(("x.y.bsae",), "host", {"node": object()})


def test_a_collection_ended_by_ctrl_c_is_not_refused_for_unknown_prerequisites(monkeypatch):
    """pytest calls pytest_collection_finish also in the ``finally`` of a collection that Ctrl-C
    ended: the prerequisites of modules it never reached are missing then, and the run must end as
    interrupted (exit 2), not be refused (exit 4). A finished collection is still refused."""
    from types import SimpleNamespace

    from gpuconform.plugin import fixtures
    monkeypatch.setattr(checks, "REGISTRY", {})
    monkeypatch.setattr("gpuconform.plugin.gating.REGISTRY", checks.REGISTRY)
    checks.check("x.y.upper", "upper", needs=["x.y.never_reached"])(lambda node: None)
    session = SimpleNamespace(items=[], config=None)
    with pytest.raises(KeyboardInterrupt):
        try:
            raise KeyboardInterrupt
        finally:
            fixtures.pytest_collection_finish(session)
    with pytest.raises(pytest.UsageError, match="x.y.upper needs x.y.never_reached"):
        fixtures.pytest_collection_finish(session)
