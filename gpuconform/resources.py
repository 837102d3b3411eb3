"""Files shipped with the package: the pods of ``manifests/``, the example profiles of
``profiles/``, the fix scripts of ``remediation/`` and the nightly's scripts of ``ci/`` (all kept at
the top of the repository and mapped into the package as ``gpuconform.manifests``, ``.profiles``,
``.remediation``, ``.ci``: setup.py). Read through
importlib.resources, so that a wheel install (``pip install .``, the in-cluster image) finds
them as an editable checkout does."""
from __future__ import annotations

from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
from pathlib import Path


def manifest(name: str) -> str:
    """The text of ``manifests/<name>``."""
    return files("gpuconform.manifests").joinpath(name).read_text()


def remediation_script(name: str) -> str:
    """The text of ``remediation/<name>`` (a companion fix script, or its ``lib.sh``)."""
    return files("gpuconform.remediation").joinpath(name).read_text()


def example_profile(name: str) -> Traversable:
    """``profiles/<name>`` (e.g. ``seed-h100.yaml``)."""
    return files("gpuconform.profiles").joinpath(name)


def example_profile_path(name: str) -> Path:
    """``profiles/<name>`` as a file path (a wheel installs it as a plain file)."""
    with as_file(example_profile(name)) as path:
        return Path(path)


def ci_script_path(name: str) -> Path:
    """``ci/<name>`` (``gpuconform-nightly.sh``, ``fetch-baseline.py``) as a file path."""
    with as_file(files("gpuconform.ci").joinpath(name)) as path:
        return Path(path)
