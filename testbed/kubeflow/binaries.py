"""Where the Kubeflow test bed's binaries are (built by build.sh into the shared cache)."""
from __future__ import annotations

import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
BINS = ("dex", "oauth2-proxy")


class MissingBinaries(RuntimeError):
    pass


def bin_dir(*, allow_build: bool = True) -> Path:
    """The cache folder holding dex and oauth2-proxy; built first when allowed and missing."""
    folder = Path(subprocess.run(["bash", str(HERE / "build.sh"), "--print-dir"], check=True,
                                 capture_output=True, text=True).stdout.strip())
    if all((folder / b).exists() for b in BINS):
        return folder
    if not allow_build:
        raise MissingBinaries(f"dex/oauth2-proxy not built in {folder}: run make kubeflow-bins")
    subprocess.run(["bash", str(HERE / "build.sh")], check=True)
    return folder
