"""The cluster and Kubeflow layers and the TLS reader do not import the node layer: the suite's
"could not check" (gpuconform/errors.py) sits below all of them (issue #26)."""
import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[2] / "gpuconform"


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def test_no_upward_import_into_the_node_layer():
    files = [*sorted((PKG / "cluster").glob("*.py")), *sorted((PKG / "kubeflow").glob("*.py")), PKG / "tls.py",
             PKG / "errors.py"]
    upward = {f.relative_to(PKG).as_posix(): sorted(m for m in _imports(f) if m.startswith("gpuconform.node"))
              for f in files}
    assert {f: m for f, m in upward.items() if m} == {}
