"""The suite as a user gets it: its wheel, built from this checkout's files, installed into a
fresh virtualenv, no source tree beside it.

Offline: the wheel is built without build isolation from a copy of the checkout's tracked and new
files (setuptools comes with the test extras) and installed with ``--no-deps --no-index``; the
dependencies are this virtualenv's, reached through a ``.pth`` placed after the fresh
site-packages (:func:`fresh_venv`), or through ``PYTHONPATH`` where a step installs the wheel
itself with pip, which then finds them satisfied (:func:`dependencies`): in both, the installed
``gpuconform`` is the only one importable."""
from __future__ import annotations

import shutil
import site
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(*cmd, cwd: Path, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout, **kw)
    assert proc.returncode == 0, f"{cmd}: exit {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def build(work: Path) -> Path:
    """The wheel of this checkout (as committed, plus new files), built under ``work``."""
    assert not work.resolve().is_relative_to(REPO)
    src = work / "src"
    files = run("git", "ls-files", "--cached", "--others", "--exclude-standard", cwd=REPO).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q",
        "-w", work / "dist", src, cwd=work)
    shutil.rmtree(src)
    return next((work / "dist").glob("gpuconform-*.whl"))


def fresh_venv(venv: Path, wheel: Path) -> Path:
    """The python of a new virtualenv at ``venv`` with ``wheel`` installed (and its ``gpuconform``
    command), the dependencies reached through a ``.pth``."""
    run(sys.executable, "-m", "venv", venv, cwd=venv.parent)
    python = venv / "bin" / "python"
    run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-index", wheel, cwd=venv.parent)
    fresh_site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                          cwd=venv.parent).stdout.strip())
    (fresh_site / "zz-gpuconform-deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return python


def dependencies(folder: Path) -> Path:
    """A folder holding this virtualenv's installed packages but gpuconform (links), for
    ``PYTHONPATH``: a ``pip install <wheel>`` then finds every dependency satisfied, offline."""
    folder.mkdir(parents=True, exist_ok=True)
    for source in site.getsitepackages():
        for entry in Path(source).iterdir():
            mine = "gpuconform" in entry.name.lower() or entry.name.split("-")[0] == "pip"  # the venv's own pip
            if not mine and not (folder / entry.name).exists():
                (folder / entry.name).symlink_to(entry)
    return folder
