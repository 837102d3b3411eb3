"""The import graph of gpuconform/ and testbed/ (issue #26): no cycle, no arrow back up.

Every import counts, at the top of a module, inside a function or under ``if TYPE_CHECKING:``: a
deferred import still ties the two modules together. Each tree declares its layers once
(gpuconform/layers.py ``CODE_LAYERS``, testbed/layers.py ``BED_LAYERS``); a module imports its own
unit and units of lower layers only, the bed imports of the suite only what ``SUITE_USED`` names,
the suite never imports the bed, and every module belongs to a declared unit. docs/architecture.md
shows the table made from the declarations, checked here too."""
from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from gpuconform.layers import CODE_LAYERS, CodeLayer
from testbed.layers import BED_LAYERS, SUITE_USED

REPO = Path(__file__).resolve().parents[2]
TREES = ("gpuconform", "testbed")


@dataclasses.dataclass(frozen=True)
class Rules:
    layers: tuple[CodeLayer, ...]  #: every tree's layers; a unit's rank is its layer's place in its own tree
    rank: dict[str, tuple[str, int]]  #: unit → (tree, layer index)
    used: dict[str, tuple[str, ...]]  #: unit → units of another tree it may import


def rules(trees: dict[str, tuple[CodeLayer, ...]], used: dict[str, tuple[str, ...]]) -> Rules:
    rank = {unit: (tree, i) for tree, layers in trees.items() for i, layer in enumerate(layers) for unit in layer.units}
    return Rules(tuple(layer for layers in trees.values() for layer in layers), rank, used)


def modules(root: Path, tops: tuple[str, ...]) -> dict[str, tuple[Path, bool]]:
    """Dotted module name → (file, is a package)."""
    out = {}
    for top in tops:
        for path in sorted((root / top).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            package = parts[-1] == "__init__"
            out[".".join(parts[:-1] if package else parts)] = (path, package)
    return out


def imports(name: str, path: Path, package: bool, known: set[str]) -> dict[str, int]:
    """The modules of ``known`` that ``name`` imports anywhere in its file → the first line."""
    out: dict[str, int] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = name.split(".") if package else name.split(".")[:-1]
                base = ".".join(here[:len(here) - node.level + 1] + ([base] if base else []))
            # ``from pkg import mod`` imports the module pkg.mod; ``from pkg import name``, pkg itself
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            if target in known and target != name:
                out[target] = min(out.get(target, node.lineno), node.lineno)
    return out


def graph(root: Path, tops: tuple[str, ...] = TREES) -> dict[str, dict[str, int]]:
    found = modules(root, tops)
    return {name: imports(name, path, package, set(found)) for name, (path, package) in found.items()}


def covers(unit: str, module: str) -> bool:
    """A unit is its module, or its package and every module below; a tree's own package (``gpuconform``)
    is its ``__init__`` only, so that a new module must find its layer."""
    return module == unit or ("." in unit and module.startswith(unit + "."))


def unit_of(module: str, r: Rules) -> str | None:
    return max((u for u in r.rank if covers(u, module)), key=len, default=None)


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    for start in sorted(g):
        if start in index:
            continue
        work = [(start, iter(sorted(g.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(g.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def problems(g: dict[str, dict[str, int]], r: Rules) -> list[str]:
    """Every module outside the declared units, arrow back up and cycle, one line each."""
    out = [f"{m}: in no declared layer (gpuconform/layers.py, testbed/layers.py)" for m in sorted(g) if unit_of(m, r) is None]
    units: dict[str, set[str]] = {}
    for a, targets in sorted(g.items()):
        ua = unit_of(a, r)
        for b, line in sorted(targets.items()):
            ub = unit_of(b, r)
            if ua is None or ub is None or ua == ub:
                continue
            units.setdefault(ua, set()).add(ub)
            (tree_a, la), (tree_b, lb) = r.rank[ua], r.rank[ub]
            if tree_a != tree_b:
                if ub not in r.used.get(ua, ()):
                    out.append(f"{a} (line {line}) imports {b}: {tree_a} may import of {tree_b} only what its "
                               f"layers declare it uses")
            elif lb >= la:
                layer_a, layer_b = _layer(r, ua).name, _layer(r, ub).name
                where = "its own layer" if lb == la else f"layer {layer_b!r}, above"
                out.append(f"{a} (line {line}) imports {b}: an arrow back up, from layer {layer_a!r} ({ua}) "
                           f"into {where} ({ub})")
    out += [f"import cycle between modules: {' ⇄ '.join(c)}: " + _lines(g, c) for c in _cycles({m: set(t) for m, t in g.items()})]
    out += [f"import cycle between units: {' ⇄ '.join(c)}" for c in _cycles(units)]
    return out


def _layer(r: Rules, unit: str) -> CodeLayer:
    return next(layer for layer in r.layers if unit in layer.units)


def _lines(g: dict[str, dict[str, int]], component: list[str]) -> str:
    return "; ".join(f"{a}:{g[a][b]} → {b}" for a in component for b in sorted(g[a]) if b in component)


REPO_RULES = rules({"gpuconform": CODE_LAYERS, "testbed": BED_LAYERS}, SUITE_USED)


def test_no_cycle_and_no_arrow_back_up_in_gpuconform_and_testbed():
    assert problems(graph(REPO), REPO_RULES) == []


def test_every_declared_unit_exists():
    found = modules(REPO, TREES)
    assert [u for u in REPO_RULES.rank if not any(covers(u, m) for m in found)] == []


def _toy(tmp_path: Path, files: dict[str, str]) -> dict[str, dict[str, int]]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return graph(tmp_path, ("toy",))


TOY = rules({"toy": (CodeLayer("low", ("toy", "toy.low"), ""), CodeLayer("high", ("toy.high", "toy.peer"), ""))}, {})


def test_a_cycle_hidden_in_a_function_and_an_arrow_back_up_fail(tmp_path):
    """The check fails, and says where: a module of the lower layer importing the higher one inside
    a function is an arrow back up and closes a cycle."""
    g = _toy(tmp_path, {"toy/__init__.py": "", "toy/low.py": "def f():\n    from toy import high\n",
                        "toy/high.py": "from . import low\n"})
    assert g == {"toy": {}, "toy.low": {"toy.high": 2}, "toy.high": {"toy.low": 1}}
    assert problems(g, TOY) == [
        "toy.low (line 2) imports toy.high: an arrow back up, from layer 'low' (toy.low) into layer 'high', "
        "above (toy.high)",
        "import cycle between modules: toy.high ⇄ toy.low: toy.high:1 → toy.low; toy.low:2 → toy.high",
        "import cycle between units: toy.high ⇄ toy.low"]


def test_peers_of_one_layer_and_undeclared_modules_fail(tmp_path):
    g = _toy(tmp_path, {"toy/__init__.py": "", "toy/low.py": "", "toy/high.py": "import toy.peer\n",
                        "toy/peer.py": "", "toy/stray.py": "from toy.low import x\n"})
    assert problems(g, TOY) == [
        "toy.stray: in no declared layer (gpuconform/layers.py, testbed/layers.py)",
        "toy.high (line 1) imports toy.peer: an arrow back up, from layer 'high' (toy.high) into its own layer "
        "(toy.peer)"]


def _table(tree: str, layers: tuple[CodeLayer, ...], used: dict[str, tuple[str, ...]]) -> str:
    rows = [f"| {tree} layer | units | holds | may import |", "|---|---|---|---|"]
    for i, layer in enumerate(layers):
        may = f"layers 0–{i - 1}" if i > 1 else "layer 0" if i else "nothing of its tree"
        may += "".join(f"; `{u}`: {', '.join(f'`{x}`' for x in used[u])}" for u in layer.units if u in used)
        names = ", ".join(f"`{u}`" for u in layer.units)
        rows.append(f"| {i} {layer.name} | {names} | {layer.holds} | {may} |")
    return "\n".join(rows) + "\n"


def test_the_architecture_doc_shows_the_declared_layers():
    doc = (REPO / "docs" / "architecture.md").read_text()
    for table in (_table("gpuconform", CODE_LAYERS, {}), _table("testbed", BED_LAYERS, SUITE_USED)):
        assert table in doc, f"docs/architecture.md should hold, as declared:\n{table}"
