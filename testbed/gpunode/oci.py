"""Container images without a registry: an OCI image layout archive (one layer) that
``ctr -n k8s.io images import`` takes, named by the ``io.containerd.image.name`` annotation of its
index entry (containerd's `images/archive` importer reads it; OCI image-spec `image-layout.md`,
`manifest.md`, `config.md` give the files). Standard library only: it runs on the GPU machine too.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
CONTAINERD_NAME = "io.containerd.image.name"
REF_NAME = "org.opencontainers.image.ref.name"


@dataclass
class Image:
    """What goes into one image: files by their path in the image, and its runtime config."""
    ref: str
    files: dict[str, Path | bytes] = field(default_factory=dict)   # image path -> host file or content
    modes: dict[str, int] = field(default_factory=dict)            # image path -> mode (default 0o755/0o644)
    links: dict[str, str] = field(default_factory=dict)            # image path -> symlink target
    dirs: dict[str, int] = field(default_factory=dict)             # empty folders -> mode
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    user: str = ""

    def add_binary(self, path: str, source: Path, *, with_libraries: bool = True) -> None:
        """A host program at ``path``, and, for a dynamic one, the shared libraries and loader it
        needs, copied from the host at the paths the host's loader resolves them to."""
        self.files[path] = source
        self.modes[path] = 0o755
        if with_libraries:
            for lib in shared_libraries(source):
                self.files.setdefault(lib, Path(lib))


_LDD_LINE = re.compile(r"^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-f]+\)$")


def shared_libraries(binary: Path) -> list[str]:
    """The absolute paths ``ldd`` lists for ``binary`` (nothing for a static one)."""
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30)
    if out.returncode != 0:  # "not a dynamic executable"
        return []
    return [m.group(1) for line in out.stdout.splitlines() if (m := _LDD_LINE.match(line))]


def _blob(data: bytes) -> tuple[str, bytes]:
    return "sha256:" + hashlib.sha256(data).hexdigest(), data


def _layer_tar(image: Image) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        parents: set[str] = set()
        entries = sorted({**{p: "f" for p in image.files}, **{p: "l" for p in image.links},
                          **{p: "d" for p in image.dirs}}.items())
        for path, kind in entries:
            rel = path.strip("/")
            parts = rel.split("/")
            for i in range(1, len(parts)):   # every parent folder, once, before its content
                parent = "/".join(parts[:i])
                if parent not in parents and "/" + parent not in image.dirs:
                    parents.add(parent)
                    tar.addfile(_info(parent, tarfile.DIRTYPE, 0o755))
            if kind == "d":
                parents.add(rel)
                tar.addfile(_info(rel, tarfile.DIRTYPE, image.dirs[path]))
            elif kind == "l":
                info = _info(rel, tarfile.SYMTYPE, 0o777)
                info.linkname = image.links[path]
                tar.addfile(info)
            else:
                src = image.files[path]
                data = src if isinstance(src, bytes) else Path(src).read_bytes()
                mode = image.modes.get(path, 0o755 if not isinstance(src, bytes) and os.access(src, os.X_OK) else 0o644)
                info = _info(rel, tarfile.REGTYPE, mode)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _info(name: str, kind: bytes, mode: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime, info.uid, info.gid = kind, mode, 0, 0, 0
    return info


def write_archive(image: Image, out: Path) -> str:
    """Write ``image`` as an OCI archive at ``out``; returns the manifest digest."""
    layer = _layer_tar(image)
    diff_id = "sha256:" + hashlib.sha256(layer).hexdigest()
    layer_digest, layer_blob = _blob(gzip.compress(layer, compresslevel=1, mtime=0))
    runtime = {"Env": [f"{k}={v}" for k, v in image.env.items()] or
               ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]}
    if image.entrypoint:
        runtime["Entrypoint"] = image.entrypoint
    if image.cmd:
        runtime["Cmd"] = image.cmd
    if image.user:
        runtime["User"] = image.user
    config = {"architecture": "amd64", "os": "linux", "config": runtime,
              "rootfs": {"type": "layers", "diff_ids": [diff_id]}}
    config_digest, config_blob = _blob(json.dumps(config, sort_keys=True).encode())
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST,
                "config": {"mediaType": CONFIG, "digest": config_digest, "size": len(config_blob)},
                "layers": [{"mediaType": LAYER, "digest": layer_digest, "size": len(layer_blob)}]}
    manifest_digest, manifest_blob = _blob(json.dumps(manifest, sort_keys=True).encode())
    tag = image.ref.rsplit(":", 1)[1] if ":" in image.ref.rsplit("/", 1)[-1] else "latest"
    index = {"schemaVersion": 2, "manifests": [{
        "mediaType": MANIFEST, "digest": manifest_digest, "size": len(manifest_blob),
        "platform": {"architecture": "amd64", "os": "linux"},
        "annotations": {CONTAINERD_NAME: image.ref, REF_NAME: tag}}]}
    out.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(out, "w") as tar:
        def add(name: str, data: bytes) -> None:
            info = _info(name, tarfile.REGTYPE, 0o644)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        add("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        add("index.json", json.dumps(index, sort_keys=True).encode())
        for digest, data in ((config_digest, config_blob), (layer_digest, layer_blob),
                             (manifest_digest, manifest_blob)):
            add("blobs/sha256/" + digest.split(":", 1)[1], data)
    return manifest_digest
