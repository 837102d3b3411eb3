"""containerd configuration (versions 1, 2 and 3) as read from ``containerd config dump`` or
from config.toml plus its imports/drop-ins.

The CRI runtime section moved between config versions:
v1 ``plugins.cri.containerd``, v2 ``plugins."io.containerd.grpc.v1.cri".containerd``,
v3 ``plugins."io.containerd.cri.v1.runtime".containerd``.
"""
from __future__ import annotations

import dataclasses
import fnmatch

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

CRI_PLUGIN = {1: "cri", 2: "io.containerd.grpc.v1.cri", 3: "io.containerd.cri.v1.runtime"}


class ConfigError(ValueError):
    pass


@dataclasses.dataclass(frozen=True)
class Runtime:
    name: str
    runtime_type: str | None
    binary_name: str | None


#: Where containerd reads CDI specs when its config names no cdi_spec_dirs (containerd
#: internal/cri/config/config_unix.go, 1.7 and 2.x alike).
CDI_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")


@dataclasses.dataclass(frozen=True)
class CriRuntimes:
    version: int
    default: str | None
    runtimes: dict[str, Runtime]
    # enable_cdi of the CRI plugin (v3: the runtime plugin); None: not in the files read, so
    # containerd's default, which its version decides (off in 1.7, on from 2.0: config_unix.go)
    enable_cdi: bool | None = None
    cdi_spec_dirs: tuple[str, ...] = CDI_SPEC_DIRS


def loads(text: str, source: str = "config") -> dict:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}") from None


def merge(base: dict, over: dict) -> dict:
    """containerd merges imported files over the main one, table by table."""
    out = dict(base)
    for k, v in over.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def merge_files(files: dict[str, str], main: str = "/etc/containerd/config.toml") -> tuple[dict, list[str]]:
    """Main config merged with the files its ``imports`` name (globs allowed), in order.

    Returns the merged config and the import patterns that matched no file we have."""
    if main not in files:
        raise ConfigError(f"{main} not found")
    cfg = loads(files[main], main)
    unmatched = []
    for pattern in cfg.get("imports", []) or []:
        hits = sorted(p for p in files if p != main and fnmatch.fnmatch(p, pattern))
        if not hits:
            unmatched.append(pattern)
        for path in hits:
            cfg = merge(cfg, {k: v for k, v in loads(files[path], path).items() if k != "version"})
    return cfg, unmatched


def cri_runtimes(cfg: dict) -> CriRuntimes:
    version = int(cfg.get("version", 1) or 1)
    if version not in CRI_PLUGIN:
        raise ConfigError(f"unknown containerd config version {version}")
    plugin = cfg.get("plugins", {}).get(CRI_PLUGIN[version], {})
    section = plugin.get("containerd", {})
    runtimes = {}
    for name, rt in (section.get("runtimes") or {}).items():
        opts = rt.get("options") or {}
        runtimes[name] = Runtime(name, rt.get("runtime_type"), opts.get("BinaryName"))
    # a version 3 file is containerd 2.x's, whose default is on; versions 1 and 2 are read by both
    enable_cdi = plugin.get("enable_cdi", True if version >= 3 else None)
    return CriRuntimes(version, section.get("default_runtime_name"), runtimes, enable_cdi,
                       tuple(plugin.get("cdi_spec_dirs") or CDI_SPEC_DIRS))


def parse_cdi_specs(text: str) -> dict[str, str]:
    """The probe's ``kind=<vendor/class> <path>`` lines → {spec path: kind} ('' when no kind was read)."""
    specs = {}
    for line in text.splitlines():
        if line.startswith("kind="):
            kind, _, path = line[len("kind="):].partition(" ")
            if path:
                specs[path] = kind
    return specs


#: The vendor of the spec the GPU Operator's toolkit writes for its own management containers
#: (nvidia-container-toolkit cmd/nvidia-ctk-installer/toolkit/toolkit.go, --cdi-kind default
#: management.nvidia.com/gpu): it gives workloads no GPU.
MANAGEMENT_VENDOR = "management.nvidia.com"


def nvidia_gpu_specs(specs: dict[str, str], dirs: tuple[str, ...]) -> list[str]:
    """The specs among ``specs`` in one of ``dirs`` that give workloads NVIDIA GPUs: kind
    ``<vendor>/gpu`` with vendor nvidia.com (``nvidia-ctk cdi generate``) or under it (the device
    plugin's k8s.device-plugin.nvidia.com), not the operator's management spec."""
    def norm(path: str) -> str:
        return path.replace("/var/run/", "/run/", 1) if path.startswith("/var/run/") else path
    wanted = {norm(d).rstrip("/") for d in dirs}
    found = []
    for path, kind in sorted(specs.items()):
        vendor, _, cls = kind.partition("/")
        if cls == "gpu" and (vendor == "nvidia.com" or vendor.endswith(".nvidia.com")) and vendor != MANAGEMENT_VENDOR \
                and norm(path).rpartition("/")[0] in wanted:
            found.append(f"{path} ({kind})")
    return found


def split_dumped_files(text: str) -> dict[str, str]:
    """The probe's ``### file <path>`` concatenation → {path: content}."""
    files: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("### file "):
            current = line[len("### file "):].strip()
            files[current] = []
        elif current:
            files[current].append(line)
    return {p: "\n".join(lines) + "\n" for p, lines in files.items()}
