"""Where the control-plane binaries are, and building them when they are not there yet."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

from testbed.gobuild import cached, read_versions

HERE = Path(__file__).resolve().parent
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kwok")


class BinariesMissing(RuntimeError):
    """The binaries are not built and building them was not allowed or failed."""


def versions() -> dict[str, str]:
    """The pinned versions from versions.env (K8S_VERSION, ETCD_VERSION, KWOK_VERSION)."""
    return read_versions(HERE / "versions.env")


def bin_dir() -> Path:
    v = versions()
    cache = Path(os.environ.get("GPUCONFORM_CACHE") or Path.home() / ".cache" / "gpuconform")
    return cache / "bin" / f"k8s-{v['K8S_VERSION']}_etcd-{v['ETCD_VERSION']}_kwok-{v['KWOK_VERSION']}"


def missing() -> list[str]:
    d = bin_dir()
    return [b for b in BINARIES if not os.access(d / b, os.X_OK)]


def ensure_built(allow_build: bool = True) -> Path:
    """Return the folder holding all binaries, running build.sh first if some are missing."""
    if missing():
        if not allow_build:
            raise BinariesMissing(f"missing {missing()} in {bin_dir()}; run `make cluster-bins`")
        result = subprocess.run(["bash", str(HERE / "build.sh")], capture_output=True, text=True)
        if result.returncode != 0 or missing():
            raise BinariesMissing(f"build.sh failed (rc={result.returncode}):\n{result.stdout[-3000:]}\n"
                                  f"{result.stderr[-3000:]}")
    return bin_dir()


def kubectl(allow_build: bool = True) -> Path:
    """kubectl at the bed's K8S_VERSION (build-kubectl.sh: its own cache folder, so the control
    plane's binaries are not rebuilt for it), built first when missing and allowed."""
    return cached(HERE / "build-kubectl.sh", ("kubectl",), "kubectl-bin", allow_build=allow_build) / "kubectl"
