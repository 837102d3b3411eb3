"""NVIDIA's GPU Operator on the real GPU node (issue #22 part 3): the chart rendered by Helm with
the article's values adapted to the lent H200, the operand images written from programs built
from NVIDIA's modules, and what the node must offer the operands. Stage side (here: Helm, the
build caches) and node side (the GPU machine: standard library, the payload) meet in the
references of the rendered objects.

Every value is a site's choice the operator's code offers (read at the pinned commit,
gpu-operator d73a0086a6ba, and the container toolkit v1.18.0):

- the driver as a host install: NVIDIA's validator takes a driver as the host's when
  ``/usr/bin/nvidia-smi`` runs in a chroot of / (validator/main.go validateHostDriver), and the
  toolkit then generates its CDI spec from / with the libraries the host's ld cache lists. On the
  lent VM ``/usr/bin/nvidia-smi`` is a script that execs /usr/local/nvidia/bin/nvidia-smi: the
  spec injected the script without its target ("not found", exit 127, in toolkit-validation; the
  H200, 2026-12-04), so the node binds the real program over it for the run (node.py);
- ``toolkit.installDir``: the toolkit's default install folder is /usr/local/nvidia, which here is
  the driver's: the toolkit goes beside it (object_controls.go TransformToolkit sets ROOT);
- ``cdi``: enabled and the default, so the runtime injects devices from CDI specs and never
  calls nvidia-container-cli (C, not served here: the toolkit image carries a stand-in,
  placeholders/);
- the toolkit's drop-in for containerd's config (``RUNTIME_DROP_IN_CONFIG`` and its host path,
  toolkit cmd/nvidia-ctk-installer/container/runtime/runtime.go): this operator commit mounts
  /etc/containerd at /runtime/config-dir/ and does not set them, so the default drop-in path
  would land inside the container;
- unprivileged containers may not pick GPUs with ``NVIDIA_VISIBLE_DEVICES``, and the device
  plugin hands devices as CDI annotations only (the toolkit's
  ``ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED``, the plugin's
  ``DEVICE_LIST_STRATEGY``; the operator's own default keeps the env var path open): the site's
  security choice the suite's ``cluster.workload.isolation`` asks for;
- operands that cannot be built here are off: DCGM and dcgm-exporter (NVIDIA's DCGM library),
  the MIG manager (its module is not served, and MIG must not change on a shared machine), GDS,
  node status exporter; NFD runs on the host as in part 2, so the chart's subchart is off;
- the operand versions are the ones built (device plugin/GFD, toolkit, validator = the operator's
  commit), so the images are imported under the exact references the ClusterPolicy names.
"""
from __future__ import annotations

from pathlib import Path

NAMESPACE = "gpu-operator"
TOOLKIT_ROOT = "/usr/local/nvidia-toolkit"
CONTAINERD_DROP_IN = "/etc/containerd/conf.d/99-nvidia.toml"
#: what the operator's transform mounts the host's containerd config folder at in the toolkit pod
TOOLKIT_CONFIG_DIR_IN_POD = "/runtime/config-dir/"
#: the operands whose DaemonSets must each have their one pod available (the others are off)
OPERANDS = ("nvidia-container-toolkit-daemonset", "nvidia-device-plugin-daemonset",
            "gpu-feature-discovery", "nvidia-operator-validator")


def values(versions: dict[str, str]) -> dict:
    """The site's values over the article's (testbed/gpuoperator/operator.py ARTICLE_VALUES)."""
    from testbed.gpuoperator.operator import ARTICLE_VALUES, merge_values
    op = versions["GPU_OPERATOR_VERSION"]
    dp = versions["K8S_DEVICE_PLUGIN_VERSION"]
    drop_in_pod = TOOLKIT_CONFIG_DIR_IN_POD + "conf.d/" + Path(CONTAINERD_DROP_IN).name
    site = {
        "operator": {"version": op},
        "validator": {"version": op},
        "cdi": {"enabled": True, "default": True},
        "toolkit": {"version": versions["NVIDIA_CONTAINER_TOOLKIT_VERSION"], "installDir": TOOLKIT_ROOT, "env": [
            {"name": "RUNTIME_DROP_IN_CONFIG", "value": drop_in_pod},
            {"name": "RUNTIME_DROP_IN_CONFIG_HOST_PATH", "value": CONTAINERD_DROP_IN},
            {"name": "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED", "value": "false"},
        ]},
        "devicePlugin": {"version": dp, "env": [{"name": "DEVICE_LIST_STRATEGY", "value": "cdi-annotations"}]},
        "gfd": {"version": dp},
        "dcgm": {"enabled": False},
        "dcgmExporter": {"enabled": False},
        "migManager": {"enabled": False},
        "gds": {"enabled": False},
        "nodeStatusExporter": {"enabled": False},
    }
    return merge_values(ARTICLE_VALUES, site)


def image_path(spec: dict) -> str:
    """An operand's image as the operator composes it (api/nvidia/v1/clusterpolicy_types.go
    ImagePath: repository/image:version, or @digest for a sha256 version)."""
    sep = "@" if spec["version"].startswith("sha256:") else ":"
    return f"{spec['repository']}/{spec['image']}{sep}{spec['version']}"


def references(objects: list[dict]) -> dict[str, str]:
    """The image each part runs from, read from the rendered chart: the operator's Deployment and
    the ClusterPolicy's operand specs (the operator fills the DaemonSets from them)."""
    policy = next(o for o in objects if o["kind"] == "ClusterPolicy")["spec"]
    deployment = next(o for o in objects if o["kind"] == "Deployment")
    refs = {"operator": deployment["spec"]["template"]["spec"]["containers"][0]["image"],
            "validator": image_path(policy["validator"]), "toolkit": image_path(policy["toolkit"]),
            "device-plugin": image_path(policy["devicePlugin"])}
    if image_path(policy["gfd"]) != refs["device-plugin"]:
        raise ValueError(f"GFD and the device plugin run different images: {image_path(policy['gfd'])} "
                         f"and {refs['device-plugin']}; the node builds one")
    return refs
