"""Where the Kubeflow test bed's binaries are (built by build.sh into the shared cache)."""
from __future__ import annotations

from pathlib import Path

from testbed.gobuild import MissingBinaries, cached

HERE = Path(__file__).resolve().parent
BINS = ("dex", "oauth2-proxy")
__all__ = ["MissingBinaries", "bin_dir"]


def bin_dir(*, allow_build: bool = True) -> Path:
    """The cache folder holding dex and oauth2-proxy; built first when allowed and missing."""
    return cached(HERE / "build.sh", BINS, "kubeflow-bins", allow_build=allow_build)
