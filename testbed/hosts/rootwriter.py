"""Writing a simulated host's root directory: files, scripts, links, device nodes and the
machine's own binaries, at the paths the host sees. Below the root's renderer (rootfs.py) and the
tools it installs (hosttools.py)."""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path


class Root:
    """Writes files below one root directory (paths given as the host sees them)."""

    def __init__(self, root: Path, stage: Path):
        self.root = root
        self.stage = stage

    def binary(self, p: str, source: str) -> None:
        """Install machine file ``source`` at ``p``: staged copy, hard-linked (copied if need be)."""
        staged = self.stage / source.lstrip("/")
        src = Path(source).resolve()
        fresh = src.stat()
        if not staged.exists() or (staged.stat().st_size, staged.stat().st_mtime_ns) != \
                (fresh.st_size, fresh.st_mtime_ns):
            staged.parent.mkdir(parents=True, exist_ok=True)
            tmp = staged.with_name(staged.name + f".{os.getpid()}")
            shutil.copy2(src, tmp)
            os.replace(tmp, staged)
        target = self.path(p)
        if target.exists():  # a library two binaries share
            return
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(staged, target)
        except OSError:
            shutil.copy2(staged, target)

    def path(self, p: str) -> Path:
        return self.root / p.lstrip("/")

    def write(self, p: str, content: str | bytes, mode: int = 0o644) -> None:
        target = self.path(p)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        target.write_bytes(data)
        target.chmod(mode)

    def script(self, p: str, content: str) -> None:
        self.write(p, content, 0o755)

    def link(self, p: str, target: str) -> None:
        link = self.path(p)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)

    def dir(self, p: str, mode: int = 0o755) -> None:
        d = self.path(p)
        d.mkdir(parents=True, exist_ok=True)
        d.chmod(mode)

    def chardev(self, p: str, major: int, minor: int, mode: int = 0o666) -> None:
        node = self.path(p)
        node.parent.mkdir(parents=True, exist_ok=True)
        os.mknod(node, stat.S_IFCHR | mode, os.makedev(major, minor))
        node.chmod(mode)
