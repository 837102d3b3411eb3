"""The platform fingerprint: what was checked (profile, hosts, GPUs, versions), by whom, with what.

Host summaries are read from node facts the checks already gathered (no extra probe). Values
that reach the report go through ``redact`` in the caller (hooks), like everything else.
"""
from __future__ import annotations

import getpass
import shlex
import socket
import subprocess
from collections import Counter
from pathlib import Path

from gpuconform.errors import CannotTell


def _try(fn, default=None):
    try:
        return fn()
    except (CannotTell, KeyError, ValueError, TypeError, AttributeError):
        return default


def mig_summary(gpus: list[dict]) -> str:
    """'disabled', 'enabled (no devices)', or 'enabled: 8 GPUs × 7×1g.10gb' style text."""
    modes = {g.get("mig_mode") for g in gpus}
    if not gpus or modes <= {None, "N/A", "[N/A]"}:
        return "unknown" if not gpus else "not supported"
    if "Enabled" not in modes:
        return "disabled"
    layouts = Counter(", ".join(f"{n}×{p}" for p, n in Counter(g["mig_devices"]).items()) or "no devices"
                      for g in gpus if g.get("mig_mode") == "Enabled")
    text = "; ".join(f"{n} GPU{'s' if n > 1 else ''}: {lay}" for lay, n in layouts.items())
    off = sum(g.get("mig_mode") != "Enabled" for g in gpus)
    return f"enabled ({text}" + (f"; {off} GPU{'s' if off > 1 else ''} without MIG" if off else "") + ")"


def host_summary(facts) -> dict:
    """A ``HostSummary`` dict from a host's ``NodeFacts``; what cannot be read stays None."""
    out: dict = {"host": facts.host, "error": facts.error}
    if facts.error:
        out["mig"] = "unknown"
        return out
    osr = _try(lambda: facts.os_release, {}) or {}
    out["os"] = osr.get("PRETTY_NAME") or " ".join(x for x in (osr.get("NAME"), osr.get("VERSION_ID")) if x) or None
    out["kernel"] = _try(lambda: facts.kernel_release)
    smi = _try(lambda: facts.gpus, []) or []
    listed = {g["index"]: g for g in (_try(lambda: facts.gpu_list, []) or [])}
    gpus = []
    for g in smi:
        idx = _try(lambda g=g: int(g["index"]), len(gpus))
        gpus.append({"index": idx, "name": g.get("name") or "?", "uuid": g.get("uuid"),
                     "mig_mode": g.get("mig.mode.current"),
                     "mig_devices": [m["profile"] for m in listed.get(idx, {}).get("mig", [])]})
    if not gpus:  # nvidia-smi query failed: `nvidia-smi -L` may still list them
        gpus = [{"index": i, "name": g["name"], "uuid": g.get("uuid"), "mig_mode": None,
                 "mig_devices": [m["profile"] for m in g.get("mig", [])]} for i, g in listed.items()]
    out["gpus"] = gpus
    out["gpu_count"] = len(gpus) if (smi or listed) else None
    names = Counter(g["name"] for g in gpus)
    out["gpu_model"] = (next(iter(names)) if len(names) == 1
                        else ", ".join(f"{n}× {name}" for name, n in names.items()) or None)
    drivers = {g.get("driver_version") for g in smi if g.get("driver_version")}
    proc = _try(lambda: facts.driver_proc_version)
    out["driver"] = ", ".join(sorted(drivers)) or (proc or {}).get("version")
    out["mig"] = mig_summary(gpus)
    packages = _try(lambda: facts.fabric_manager_packages, []) or []
    out["fabric_manager"] = ", ".join(sorted({p.version for p in packages if p.installed})) or None
    return out


def cluster_summary(facts) -> dict | None:
    """``{name, api_server_version, gpu_nodes}`` from the cluster layer's facts of a reachable API
    server (its ``/version`` was already read to get there, its GPU nodes listed for the checks'
    parameters), else None."""
    try:
        version = facts.version()
        server = facts.cluster.server
    except Exception:  # a report must not fail because a fact cannot be read: leave the fields out
        return None
    try:
        gpu_nodes = [gpu_node_summary(n) for n in facts.gpu_nodes()]
    except Exception:  # the node list could not be read: the node checks say why
        gpu_nodes = []
    return {"name": server, "api_server_version": version.get("gitVersion"), "gpu_nodes": gpu_nodes}


def gpu_node_summary(node: dict) -> dict:
    """A ``GpuNode`` dict from a Kubernetes node's labels; the MIG devices of one GPU are the MIG
    catalog's for the node's ``nvidia.com/mig.config`` (None when the catalog does not know it)."""
    from gpuconform.cluster import nodes
    from gpuconform.mig import catalog

    labels = nodes.labels(node)
    count = labels.get(nodes.LABEL_COUNT)
    product, config = labels.get(nodes.LABEL_PRODUCT), labels.get(nodes.LABEL_MIG_CONFIG)
    devices = None
    if product and config and config != "all-disabled":
        devices = _try(lambda: catalog.mig_devices_per_gpu(product, config))
    return {"name": nodes.name(node), "gpu_product": product,
            "gpu_count": int(count) if count and count.isascii() and count.isdigit() else None,
            "mig_config": config, "mig_state": labels.get(nodes.LABEL_MIG_STATE), "mig_devices": devices}


def git_commit(folder: Path) -> str | None:
    """HEAD of the suite's checkout, '+dirty' when tracked files are modified; None without git."""
    def git(*args: str) -> str | None:
        try:
            p = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return p.stdout.strip() if p.returncode == 0 else None
    head = git("rev-parse", "HEAD")
    if not head:
        return None
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return head + ("+dirty" if dirty else "")


def run_by() -> str:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "unknown"
    return f"{user}@{socket.gethostname()}"


def command_line(args: tuple[str, ...] | list[str]) -> str:
    """The command as typed (pytest's invocation args), shell-quoted."""
    return shlex.join(["pytest", *args])
