"""Where the GPU Operator controller, Helm and the operator module's chart and assets are
(built by build.sh into the shared cache)."""
from __future__ import annotations

from pathlib import Path

from testbed.gobuild import MissingBinaries, cached, read_versions

HERE = Path(__file__).resolve().parent
BINS = ("gpu-operator", "helm", "gpu-operator-module")
__all__ = ["MissingBinaries", "bin_dir", "chart_dir", "module_dir", "versions"]


def bin_dir(*, allow_build: bool = True) -> Path:
    """The cache folder; built first when allowed and missing."""
    return cached(HERE / "build.sh", BINS, "gpu-operator-bins", allow_build=allow_build)


def module_dir(*, allow_build: bool = True) -> Path:
    """NVIDIA/gpu-operator's files at the pinned version (build.sh): assets/, manifests/,
    deployments/gpu-operator/, validator/*.yaml."""
    return bin_dir(allow_build=allow_build) / "gpu-operator-module"


def chart_dir(*, allow_build: bool = True) -> Path:
    return module_dir(allow_build=allow_build) / "deployments" / "gpu-operator"


def versions() -> dict[str, str]:
    """The pinned versions from versions.env."""
    return read_versions(HERE / "versions.env")
