"""The check layers are declared once (gpuconform/layers.py ``CHECK_LAYERS``): the plugin's markers
and the report's sections are made from it, the folders of tests/ are it, and pyproject.toml, which
pytest reads and which cannot import it, repeats the plugin's markers word for word (issue #26)."""
from __future__ import annotations

import tomllib
from pathlib import Path

from gpuconform.layers import CHECK_LAYERS
from gpuconform.plugin.plugin import MARKERS

REPO = Path(__file__).resolve().parents[2]


def test_pyproject_repeats_the_plugins_markers():
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    declared = [f"{name}: {text}" for name, text in MARKERS.items()]
    assert pyproject["tool"]["pytest"]["ini_options"]["markers"] == declared


def test_each_check_layer_is_a_folder_of_checks_and_a_marker():
    folders = {p.name for p in (REPO / "tests").iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    assert folders == set(CHECK_LAYERS)
    assert all(MARKERS[layer] == text for layer, text in CHECK_LAYERS.items())
