"""Where the Kubeflow Trainer and JobSet controllers and their modules' manifests are (built by
build.sh into the shared cache)."""
from __future__ import annotations

from pathlib import Path

from testbed.gobuild import MissingBinaries, cached, read_versions

HERE = Path(__file__).resolve().parent
BINS = ("trainer-controller-manager", "jobset-controller", "trainer-manifests", "jobset-manifests")
__all__ = ["MissingBinaries", "bin_dir", "versions"]


def bin_dir(*, allow_build: bool = True) -> Path:
    """The cache folder: the two controllers, ``trainer-manifests/`` (kubeflow/trainer's
    manifests/) and ``jobset-manifests/`` (jobset's config/); built first when allowed and missing."""
    return cached(HERE / "build.sh", BINS, "trainer-bins", allow_build=allow_build)


def versions() -> dict[str, str]:
    """The pinned versions from versions.env."""
    return read_versions(HERE / "versions.env")
