"""Where the nvidia-device-plugin Helm chart is (fetched by build.sh into the shared cache)."""
from __future__ import annotations

from pathlib import Path

from testbed.gobuild import cached, read_versions

HERE = Path(__file__).resolve().parent


def chart_dir(*, allow_build: bool = True) -> Path:
    """deployments/helm/nvidia-device-plugin of NVIDIA/k8s-device-plugin at the pinned version."""
    folder = cached(HERE / "build.sh", ("device-plugin-module",), "device-plugin-chart", allow_build=allow_build)
    return folder / "device-plugin-module" / "deployments" / "helm" / "nvidia-device-plugin"


def versions() -> dict[str, str]:
    return read_versions(HERE / "versions.env")
