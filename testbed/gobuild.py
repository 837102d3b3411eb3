"""Where a test bed's Go binaries are: the cache folder its build.sh prints (gobuild.sh), built
first when allowed and something is missing."""
from __future__ import annotations

import subprocess
from pathlib import Path


class MissingBinaries(RuntimeError):
    """The binaries are not built and building them was not allowed or failed."""


def cached(build_sh: Path, names: tuple[str, ...], make_target: str, *, allow_build: bool = True) -> Path:
    folder = Path(subprocess.run(["bash", str(build_sh), "--print-dir"], check=True,
                                 capture_output=True, text=True).stdout.strip())
    if all((folder / n).exists() for n in names):
        return folder
    if not allow_build:
        raise MissingBinaries(f"{', '.join(names)} not built in {folder}: run make {make_target}")
    result = subprocess.run(["bash", str(build_sh)], capture_output=True, text=True)
    if result.returncode != 0:
        raise MissingBinaries(f"{build_sh} failed (rc={result.returncode}):\n{result.stdout[-3000:]}\n"
                              f"{result.stderr[-3000:]}")
    return folder


def read_versions(env_file: Path) -> dict[str, str]:
    """The pinned versions of a test bed's versions.env (KEY=value lines, # comments)."""
    out = {}
    for line in env_file.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and not line.lstrip().startswith("#"):
            out[key.strip()] = value.strip()
    return out
