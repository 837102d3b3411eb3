"""Where the GPU Operator controller, Helm and the operator module's chart and assets are
(built by build.sh into the shared cache)."""
from __future__ import annotations

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
BINS = ("gpu-operator", "helm", "gpu-operator-module")


class MissingBinaries(RuntimeError):
    pass


def bin_dir(*, allow_build: bool = True) -> Path:
    """The cache folder; built first when allowed and missing."""
    folder = Path(subprocess.run(["bash", str(HERE / "build.sh"), "--print-dir"], check=True,
                                 capture_output=True, text=True).stdout.strip())
    if all((folder / b).exists() for b in BINS):
        return folder
    if not allow_build:
        raise MissingBinaries(f"gpu-operator/helm not built in {folder}: run make gpu-operator-bins")
    result = subprocess.run(["bash", str(HERE / "build.sh")], capture_output=True, text=True)
    if result.returncode != 0:
        raise MissingBinaries(f"build.sh failed (rc={result.returncode}):\n{result.stdout[-3000:]}\n"
                              f"{result.stderr[-3000:]}")
    return folder


def module_dir(*, allow_build: bool = True) -> Path:
    """NVIDIA/gpu-operator's files at the pinned version (build.sh): assets/, manifests/, deployments/gpu-operator/, validator/*.yaml."""
    return bin_dir(allow_build=allow_build) / "gpu-operator-module"


def chart_dir(*, allow_build: bool = True) -> Path:
    return module_dir(allow_build=allow_build) / "deployments" / "gpu-operator"


def versions() -> dict[str, str]:
    """The pinned versions from versions.env."""
    out = {}
    for line in (HERE / "versions.env").read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out
