"""Stage the real GPU node for the device machine: one solid xz archive `.gpunode/payload.tar.xz`
(ignored by git, carried by the device call) holding the node's binaries, the Python packages the
suite and the bring-up need on the GPU machine's Python, NVIDIA's device plugin chart rendered by
Helm, NFD's CRDs and configs. Everything else (the suite, profiles, manifests, this bed's code)
travels as the working tree.

    python -m testbed.gpunode stage          # prints the payload's size; must stay under the carry limit
"""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

import yaml

from testbed.cluster import binaries as cluster_binaries
from testbed.deviceplugin import binaries as dp_binaries
from testbed.deviceplugin import chart
from testbed.gobuild import cached, read_versions
from testbed.gpunode import config

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
STAGE = REPO / ".gpunode"
PAYLOAD = STAGE / "payload.tar.xz"
CARRY_LIMIT = 64 * 1024 * 1024
#: the GPU machine's Python (Ubuntu 24.04): the packages are fetched for it, not for this one
TARGET_PYTHON = "3.12"
BINARIES = ("kube", "containerd", "ctr", "containerd-shim-runc-v2", "runc", "bridge", "host-local",
            "loopback", "nvidia-ctk", "nvidia-cdi-hook", "nvidia-container-runtime",
            "nvidia-device-plugin", "gpu-feature-discovery", "nfd-master", "nfd-worker", "pause", "busybox")
#: The site's choices for NVIDIA's device plugin chart on this node (over the bed's gfd on / nfd
#: off): the driver lives under /usr/local/nvidia on the lent machine; devices are handed to
#: containers as volume mounts, so that an image's NVIDIA_VISIBLE_DEVICES=all cannot reach a GPU
#: (the chart then gives the plugin CAP_SYS_ADMIN, templates/_helpers.tpl, which the toolkit counts
#: as privileged: internal/config/image/privileged.go).
CHART_VALUES = {"deviceListStrategy": "volume-mounts", "nvidiaDriverRoot": "/usr/local/nvidia"}


def bin_dir(*, allow_build: bool = True) -> Path:
    return cached(HERE / "build.sh", BINARIES + ("nfd-crds.yaml",), "gpunode-bins", allow_build=allow_build)


def versions() -> dict[str, str]:
    return {**cluster_binaries.versions(), **dp_binaries.versions(), **read_versions(HERE / "versions.env")}


def python_requirements() -> list[str]:
    """The suite's runtime dependencies, as pyproject.toml names them."""
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    return [d for d in deps if "python_version <" not in d]


def fetch_site_packages(target: Path) -> None:
    """pip installs the wheels for the GPU machine's Python and platform into ``target``."""
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--target", str(target),
                    "--python-version", TARGET_PYTHON, "--implementation", "cp", "--abi", f"cp{TARGET_PYTHON.replace('.', '')}",
                    "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                    "--platform", "manylinux2014_x86_64", "--only-binary=:all:", "--no-compile",
                    *python_requirements()], check=True, timeout=600)
    for junk in target.glob("**/__pycache__"):
        shutil.rmtree(junk, ignore_errors=True)


def stage(out: Path = PAYLOAD) -> dict:
    t0 = time.monotonic()
    bins = bin_dir()
    etcd = cluster_binaries.ensure_built(True) / "etcd"
    values_file = dp_binaries.chart_dir() / "values.yaml"
    chart_values = yaml.safe_load(values_file.read_text())
    objects = chart.render(CHART_VALUES)
    nfd_master, nfd_worker = config.nfd_configs(chart_values)
    with tempfile.TemporaryDirectory(prefix="gpunode-stage-") as tmp:
        site = Path(tmp) / "site"
        fetch_site_packages(site)
        out.parent.mkdir(parents=True, exist_ok=True)
        raw = Path(tmp) / "payload.tar"
        with tarfile.open(raw, "w") as tar:
            for name in BINARIES:
                tar.add(bins / name, f"bin/{name}")
            tar.add(etcd, "bin/etcd")
            tar.add(site, "site")
            for name, data in (
                ("chart/objects.yaml", yaml.safe_dump_all(objects, sort_keys=False)),
                ("chart/values.yaml", yaml.safe_dump(chart.merge_values(chart.BASE_VALUES, CHART_VALUES))),
                ("nfd/crds.yaml", (bins / "nfd-crds.yaml").read_text()),
                ("nfd/master.yaml", yaml.safe_dump(nfd_master)),
                ("nfd/worker.yaml", yaml.safe_dump(nfd_worker)),
                ("versions.json", json.dumps(versions(), indent=2, sort_keys=True)),
            ):
                blob = data.encode()
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(blob), 0o644
                tar.addfile(info, io.BytesIO(blob))
        raw_size = raw.stat().st_size
        # one solid stream with a dictionary as large as the binaries: they share much code
        with open(out, "wb") as f:
            subprocess.run(["xz", "-T1", "--lzma2=preset=9e,dict=256MiB", "-c", str(raw)], stdout=f,
                           check=True, timeout=1800)
    size = out.stat().st_size
    return {"payload": str(out), "raw_bytes": raw_size, "xz_bytes": size,
            "seconds": round(time.monotonic() - t0, 1), "under_carry_limit": size < CARRY_LIMIT}
