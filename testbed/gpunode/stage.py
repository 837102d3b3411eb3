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
from testbed.gpunode import config, node

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
STAGE = REPO / ".gpunode"
PAYLOAD = STAGE / "payload.tar.xz"
OPERATOR_PAYLOAD = STAGE / "operator.tar.xz"
CARRY_LIMIT = 64 * 1024 * 1024   # the device call's: the payload and the working tree together
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


#: Distributions the GPU machine's Python already holds (its image's package list, as the device
#: tool's KINDS.md gives it): not carried. The suite's run puts its own packages first and the
#: machine's after them.
ON_GPU_MACHINE = frozenset({
    "pyyaml", "requests", "urllib3", "charset-normalizer", "idna", "certifi", "jinja2", "markupsafe",
    "python-dateutil", "six", "attrs", "pygments", "tzdata", "aiohttp", "multidict", "yarl", "frozenlist",
    "propcache", "aiosignal", "aiohappyeyeballs"})
#: Distributions and package folders this node's run never imports: the SSH stack of ssh:// and
#: paramiko:// hosts (the node is judged through k8s-node://), the Kubernetes client's asyncio
#: flavour and what only it needs (the suite uses the synchronous client), and cryptography with
#: what only it needs (only the Kubeflow layer's TLS checks load it, gpuconform/tls.py; this run is
#: `-m "node or cluster"`). selftest/gpunode proves the run collects and imports without them.
NOT_IMPORTED = frozenset({"paramiko", "pynacl", "bcrypt", "invoke", "aiohttp-retry", "cryptography", "cffi",
                          "pycparser"})
NOT_IMPORTED_FOLDERS = ("kubernetes/aio",)


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def prune_site_packages(target: Path) -> list[str]:
    """Remove from ``target`` every file its installed metadata (RECORD) lists for the
    distributions above, and the folders never imported; the names removed."""
    import importlib.metadata as metadata
    removed = []
    for dist in metadata.distributions(path=[str(target)]):
        name = _normalized(dist.metadata["Name"])
        if name in ON_GPU_MACHINE | NOT_IMPORTED:
            for f in dist.files or []:
                path = target / f
                if path.resolve().is_relative_to(target.resolve()):
                    path.unlink(missing_ok=True)
            removed.append(name)
    for folder in NOT_IMPORTED_FOLDERS:
        shutil.rmtree(target / folder, ignore_errors=True)
    for empty in sorted((p for p in target.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(empty.iterdir()):
            empty.rmdir()
    return sorted(removed)


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
        pruned = prune_site_packages(site)
        pki = Path(tmp) / "pki"
        node.issue_pki(pki)
        out.parent.mkdir(parents=True, exist_ok=True)
        raw = Path(tmp) / "payload.tar"
        with tarfile.open(raw, "w") as tar:
            for name in BINARIES:
                tar.add(bins / name, f"bin/{name}")
            tar.add(etcd, "bin/etcd")
            tar.add(site, "site")
            tar.add(pki, "pki")
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
        _xz(raw, out)
    size = out.stat().st_size
    return {"payload": str(out), "raw_bytes": raw_size, "xz_bytes": size, "not_carried": pruned,
            "tree_bytes": (tree := working_tree_bytes()), "seconds": round(time.monotonic() - t0, 1),
            "under_carry_limit": size + tree < CARRY_LIMIT}


def _xz(raw: Path, out: Path) -> None:
    """One solid stream with a dictionary as large as the binaries (they share much code), and
    xz's x86 branch filter first: most of the payload is x86-64 machine code (about 5 % less)."""
    with open(out, "wb") as f:
        subprocess.run(["xz", "-T1", "--x86", "--lzma2=preset=9e,dict=256MiB", "-c", str(raw)], stdout=f,
                       check=True, timeout=1800)


def _add_text(tar: tarfile.TarFile, name: str, text: str) -> None:
    blob = text.encode()
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(blob), 0o644
    tar.addfile(info, io.BytesIO(blob))


def operator_bin_dir(*, allow_build: bool = True) -> Path:
    return cached(HERE / "build-operator.sh", OPERATOR_BINARIES, "gpunode-operator-bins", allow_build=allow_build)


#: build-operator.sh's programs and stand-ins (the controller is the cluster bed's)
OPERATOR_BINARIES = ("nvidia-validator", "nvidia-ctk-installer", "nvidia-container-runtime-hook",
                     "nvidia-container-runtime.cdi", "nvidia-container-runtime.legacy", "nvidia-container-cli",
                     "libnvidia-container.so.1", "libnvidia-container-go.so.1")


def operator_versions() -> dict[str, str]:
    from testbed.gpuoperator import binaries as op_binaries
    return {**versions(), **op_binaries.versions()}


def render_operator() -> list[dict]:
    """The GPU Operator's chart rendered by Helm with the node's values (operator_stack.values)."""
    from testbed.gpuoperator import operator as op
    from testbed.gpunode import operator_stack
    return op.render(operator_stack.values(operator_versions()))


def stage_operator(out: Path = OPERATOR_PAYLOAD) -> dict:
    """``.gpunode/operator.tar.xz``: what part 3 adds to the node's payload -- the controller, the
    operands' programs, the operator module's assets and validator manifests, the chart rendered
    by Helm. It travels in its own device call (the two together pass the call's 64 MiB): the
    node's payload stays on the warm machine from the call before."""
    from testbed.gpuoperator import binaries as op_binaries
    t0 = time.monotonic()
    op_bins = operator_bin_dir()
    controller = op_binaries.bin_dir()
    module = op_binaries.module_dir()
    objects = render_operator()
    with tempfile.TemporaryDirectory(prefix="gpunode-operator-") as tmp:
        raw = Path(tmp) / "operator.tar"
        with tarfile.open(raw, "w") as tar:
            tar.add(controller / "gpu-operator", "operator/bin/gpu-operator")
            for name in OPERATOR_BINARIES:
                tar.add(op_bins / name, f"operator/bin/{name}")
            for folder in ("assets", "manifests", "validator"):
                tar.add(module / folder, f"operator/module/{folder}")
            _add_text(tar, "operator/objects.yaml", yaml.safe_dump_all(objects, sort_keys=False))
            _add_text(tar, "operator/versions.json", json.dumps(operator_versions(), indent=2, sort_keys=True))
        raw_size = raw.stat().st_size
        out.parent.mkdir(parents=True, exist_ok=True)
        _xz(raw, out)
    size = out.stat().st_size
    return {"payload": str(out), "raw_bytes": raw_size, "xz_bytes": size, "tree_bytes": (tree := working_tree_bytes()),
            "seconds": round(time.monotonic() - t0, 1), "under_carry_limit": size + tree < CARRY_LIMIT}


def working_tree_bytes() -> int:
    """What else a device call sends: the tracked files and the untracked ones git does not ignore."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True, timeout=60).stdout.split(b"\0")
    return sum((REPO / n.decode()).stat().st_size for n in names if n and (REPO / n.decode()).is_file())
