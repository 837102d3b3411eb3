"""The node side of the simulated GPU workers: what NVIDIA's operands do on a real node once the
GPU Operator has scheduled them there. KWOK only marks their pods Running; this process plays
what runs inside them, following NVIDIA's code:

* **device plugin** (NVIDIA/k8s-device-plugin v0.18.0), the GPU Operator's DaemonSet or the
  ``nvidia-device-plugin`` Helm chart's (told apart by container, not by who deployed it): while
  its pod has been Ready for a moment (the plugin registers with the kubelet), capacity/
  allocatable carry the node's devices, named by the MIG strategy (the container's MIG_STRATEGY,
  else the config file's ``flags.migStrategy``, else ``none``; mixed: ``nvidia.com/gpu`` per
  whole GPU, ``nvidia.com/mig-<profile>`` per MIG device, formats.md 5.3; single: every MIG
  device an ``nvidia.com/gpu``, and nothing at all when the GPUs do not all carry one profile --
  internal/rm and internal/lm/mig-strategy.go) and replicated as the config file's
  ``sharing.timeSlicing`` / ``sharing.mps`` says (api/config/v1/sharing.go, replicas.go: N
  devices per device, renamed ``<name>.shared`` with ``renameByDefault``). The config file is
  what the pod's config-manager picks (cmd/config-manager/main.go): the ConfigMap key named by the
  node's ``nvidia.com/device-plugin.config`` label, else DEFAULT_CONFIG, else the
  FALLBACK_STRATEGIES (``named``: key ``default``; ``single``: the only key; ``empty``: none).
  What the plugin registered is written on the node (``testbed.gpuconform.io/device-plugin``)
  for the device simulator, as the kubelet's device manager knows it. Without a Ready plugin pod the kubelet marks the devices
  unhealthy: allocatable 0, capacity kept (kubernetes pkg/kubelet/cm/devicemanager manager.go,
  the endpoint's stop marks its resource's devices unhealthy). GPUs listed in ``testbed.gpuconform.io/lost-gpus``
  (an Xid 79 "fallen off the bus") are counted in capacity, not in allocatable.
* **GPU Feature Discovery**: while its pod is Ready, the node's ``nvidia.com/gpu.*``, ``cuda.*``
  and, under the mixed strategy, ``nvidia.com/mig-<profile>.*`` labels (formats.md 5.1), as
  k8s-device-plugin v0.18.0 internal/lm writes them: under single ``gpu.product`` is
  ``<product>-MIG-<profile>`` and ``gpu.count`` the MIG devices (``-MIG-INVALID`` and 0 for a
  layout single cannot serve); a replicated resource gets ``-SHARED``, ``.replicas`` and
  ``.sharing-strategy`` (resource.go baseLabeler); ``gpu.family`` by compute capability
  (getArchFamily); ``mig.capable`` from the GPU.
* **operator validator** (gpu-operator validator/main.go): when its pod runs on the node, the
  cuda and plugin validations create their workload pods from NVIDIA's own manifests
  (validator/cuda-workload-validation.yaml, plugin-workload-validation.yaml), but only where the
  init container's WITH_WORKLOAD is true (the validator's default; the operator's asset sets it
  false for plugin validation, assets/state-operator-validation/0500_daemonset.yaml).
* **MIG manager** (NVIDIA/mig-parted pkg/mig/reconfigure/reconfigure.go): when its pod runs and
  the node's ``nvidia.com/mig.config`` is not the one it last handled: the selected config is
  validated against the ConfigMap its DaemonSet mounts (``mig-parted-config``); already applied ->
  ``success``; else ``pending``, the GPU clients' ``nvidia.com/gpu.deploy.*`` labels set to
  ``paused-for-mig-change`` and their pods waited out, the validator workload pods deleted, the
  GPUs repartitioned, the validator pod deleted, the labels restored and only then ``success`` --
  so the device plugin republishes allocatable seconds AFTER ``success``, as on a real node.
  A GPU held by a process (``testbed.gpuconform.io/gpu-in-use``) makes the change ``failed``.

The simulated hardware of a node is its annotation ``testbed.gpuconform.io/gpus``
(model, count, machine, driver, MIG layout per GPU); only this process changes the layout.
Operand pods on a node listed in ``testbed.gpuconform.io/broken-operands`` (``app=crashloop`` or
``app=init-error``) are marked for the KWOK stages that make them fail: faults of the node, seen
by the real DaemonSet controller and the real GPU Operator.

Run: ``python -m testbed.cluster.nodeagent --kubeconfig K`` (the control plane starts it).
"""
from __future__ import annotations

import argparse
import heapq
import json
import logging
import sys
import threading
import time
from pathlib import Path

import yaml
from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.cluster import informer, migparted
from testbed.cluster.hardware import GPUS, Gpu

ANN = "testbed.gpuconform.io/"
ANN_GPUS = ANN + "gpus"
ANN_LOST = ANN + "lost-gpus"
ANN_IN_USE = ANN + "gpu-in-use"
ANN_BROKEN = ANN + "broken-operands"
ANN_SIMULATE = ANN + "simulate"
ANN_PLUGIN = ANN + "device-plugin"
LABEL_CONFIG, LABEL_STATE = "nvidia.com/mig.config", "nvidia.com/mig.config.state"
#: the GPU clients the MIG manager pauses (reconfigure.go shutdownKubernetesGPUClients)
CLIENT_DEPLOY_LABELS = ("nvidia.com/gpu.deploy.device-plugin", "nvidia.com/gpu.deploy.gpu-feature-discovery",
                        "nvidia.com/gpu.deploy.dcgm-exporter", "nvidia.com/gpu.deploy.dcgm",
                        "nvidia.com/gpu.deploy.nvsm")
CLIENT_APPS = ("nvidia-device-plugin-daemonset", "gpu-feature-discovery", "nvidia-dcgm-exporter", "nvidia-dcgm")
APP_PLUGIN, APP_GFD = "nvidia-device-plugin-daemonset", "gpu-feature-discovery"
#: the main container of each role: the GPU Operator's assets (state-device-plugin,
#: gpu-feature-discovery 0500_daemonset.yaml) and the nvidia-device-plugin chart's templates
ROLE_CONTAINERS = {"plugin": ("nvidia-device-plugin", "nvidia-device-plugin-ctr"),
                   "gfd": ("gpu-feature-discovery", "gpu-feature-discovery-ctr")}
APP_VALIDATOR, APP_MIG = "nvidia-operator-validator", "nvidia-mig-manager"
WORKLOADS = {"cuda": ("nvidia-cuda-validator", "cuda-workload-validation.yaml"),
             "plugin": ("nvidia-device-plugin-validator", "plugin-workload-validation.yaml")}
REGISTER_S = 2.0      # a device plugin pod Ready this long has registered with the kubelet
REPARTITION_S = 1.0   # destroying and creating the MIG devices

log = logging.getLogger("nodeagent")


# -- the simulated hardware ----------------------------------------------------------------------
def hardware(node: client.V1Node) -> dict | None:
    raw = (node.metadata.annotations or {}).get(ANN_GPUS)
    return json.loads(raw) if raw else None


def gpu_of(hw: dict) -> Gpu:
    return GPUS[hw["product"]]


def resource_name(profile: str) -> str:
    return "nvidia.com/mig-" + profile.replace("+", ".")


def single_profile(hw: dict) -> str | None:
    """The one MIG profile every GPU carries, where the single strategy can serve the layout
    ("" when MIG is off on every GPU); None when it cannot (mig-strategy.go: MIG on some GPUs and
    off on others, an empty MIG GPU, or more than one profile)."""
    layouts = hw["layout"]
    if all(x is None for x in layouts):
        return ""
    if any(x is None or not any(x.values()) for x in layouts):
        return None
    profiles = {p for x in layouts for p, n in x.items() if n}
    return profiles.pop() if len(profiles) == 1 else None


def plugin_resources(hw: dict, strategy: str, skip: set[int] = frozenset(),
                     replication: dict | None = None) -> dict[str, int]:
    """What the device plugin advertises for the GPUs not in ``skip``, replicated as
    ``replication`` ({resource: {"replicas": N, "rename": name or None}}) says."""
    out: dict[str, int] = {}
    if strategy == "single" and single_profile(hw) is None:
        return out  # the plugin refuses to serve the layout
    for i, layout in enumerate(hw["layout"]):
        if i in skip:
            continue
        if layout is None or strategy == "none":
            out["nvidia.com/gpu"] = out.get("nvidia.com/gpu", 0) + 1
        elif strategy == "single":
            out["nvidia.com/gpu"] = out.get("nvidia.com/gpu", 0) + sum(layout.values())
        else:
            for profile, n in layout.items():
                out[resource_name(profile)] = out.get(resource_name(profile), 0) + n
    replicated: dict[str, int] = {}
    for res, n in out.items():
        r = (replication or {}).get(res)
        name = (r.get("rename") or res) if r else res
        replicated[name] = replicated.get(name, 0) + n * (r["replicas"] if r else 1)
    return replicated


def _shared(replication: dict | None, resource: str) -> tuple[int, str, bool]:
    """(replicas, sharing strategy, renamed) GFD writes for ``resource`` (resource.go baseLabeler)."""
    r = (replication or {}).get(resource)
    replicas = r["replicas"] if r else 1
    return replicas, (r["how"] if r and replicas > 1 else "none"), bool(r and r.get("rename"))


def gfd_labels(hw: dict, strategy: str, replication: dict | None = None) -> dict[str, str]:
    gpu = gpu_of(hw)
    major, minor, rev = hw["driver"].split(".")
    whole = [x for x in hw["layout"] if x is None]
    replicas, sharing, renamed = _shared(replication, "nvidia.com/gpu")
    if not whole:  # only MIG-enabled GPUs: their labels carry no sharing (mig-strategy.go newGPULabelers)
        replicas, sharing, renamed = 0, "none", False
    suffix = "-SHARED" if replicas > 1 and not renamed else ""
    mps = any(r.get("how") == "mps" for r in (replication or {}).values())
    labels = {
        "nvidia.com/gpu.product": gpu.product_label + suffix, "nvidia.com/gpu.count": str(hw["count"]),
        "nvidia.com/gpu.memory": str(gpu.memory_mib), "nvidia.com/gpu.family": gpu.family,
        "nvidia.com/gpu.compute.major": str(gpu.compute[0]), "nvidia.com/gpu.compute.minor": str(gpu.compute[1]),
        "nvidia.com/gpu.machine": hw["machine"], "nvidia.com/gpu.replicas": str(replicas),
        "nvidia.com/gpu.sharing-strategy": sharing, "nvidia.com/mps.capable": str(mps).lower(),
        "nvidia.com/mig.capable": str(bool(gpu.mig_profiles)).lower(),
        "nvidia.com/cuda.driver-version.full": hw["driver"], "nvidia.com/cuda.driver-version.major": major,
        "nvidia.com/cuda.driver-version.minor": minor, "nvidia.com/cuda.driver-version.revision": rev,
        "nvidia.com/cuda.runtime-version.full": hw["cuda"],
        "nvidia.com/cuda.runtime-version.major": hw["cuda"].split(".")[0],
        "nvidia.com/cuda.runtime-version.minor": hw["cuda"].split(".")[1],
    }
    if strategy in ("single", "mixed"):
        labels["nvidia.com/mig.strategy"] = strategy
    if strategy == "single" and single_profile(hw):
        profile = gpu.profile(single_profile(hw))
        labels.update(_mig_labels(gpu, profile, "nvidia.com/gpu", sum(sum(x.values()) for x in hw["layout"]),
                                  replication))
    elif strategy == "single" and single_profile(hw) is None:
        labels.update({"nvidia.com/gpu.product": f"{gpu.product_label}-MIG-INVALID", "nvidia.com/gpu.count": "0",
                       "nvidia.com/gpu.replicas": "0", "nvidia.com/gpu.sharing-strategy": "",
                       "nvidia.com/gpu.memory": "0"})
    elif strategy == "mixed":
        for res, n in plugin_resources(hw, strategy).items():
            if res.startswith("nvidia.com/mig-"):
                profile = gpu.profile(res[len("nvidia.com/mig-"):].replace(".me", "+me"))
                labels.update(_mig_labels(gpu, profile, res, n, replication))
    return labels


def _mig_labels(gpu: Gpu, profile, prefix: str, count: int, replication: dict | None) -> dict[str, str]:
    """GFD's labels of one MIG resource (resource.go NewMIGResourceLabeler, baseLabeler)."""
    replicas, sharing, renamed = _shared(replication, prefix)
    suffix = "-SHARED" if replicas > 1 and not renamed else ""
    return {f"{prefix}.count": str(count), f"{prefix}.product": f"{gpu.product_label}-MIG-{profile.name}{suffix}",
            f"{prefix}.multiprocessors": str(profile.sm), f"{prefix}.replicas": str(replicas),
            f"{prefix}.sharing-strategy": sharing, f"{prefix}.slices.gi": str(profile.gpu_slices),
            f"{prefix}.slices.ci": str(profile.gpu_slices),
            **{f"{prefix}.engines.{k}": str(v) for k, v in profile.engines.items()}}


# -- the device plugin's config file, as its config-manager picks it ------------------------------
def _env(container) -> dict[str, str]:
    return {e.name: e.value for e in container.env or [] if e.value is not None}


def config_key(data: dict, node_labels: dict, manager) -> str:
    """The ConfigMap key the config-manager selects (cmd/config-manager/main.go): the node's label,
    else DEFAULT_CONFIG, else the fallback strategies in order; "" for an empty config."""
    env = _env(manager)
    chosen = node_labels.get(env.get("NODE_LABEL") or "nvidia.com/device-plugin.config") or env.get("DEFAULT_CONFIG")
    if chosen:
        return chosen
    for fallback in (env.get("FALLBACK_STRATEGIES") or "").split(","):
        if fallback == "named" and "default" in data:
            return "default"
        if fallback == "single" and len(data) == 1:
            return next(iter(data))
        if fallback == "empty":
            return ""
    return ""


def parse_plugin_config(text: str) -> tuple[str | None, dict]:
    """(flags.migStrategy, {resource: {"replicas", "rename", "how"}}) of a device plugin config
    file (api/config/v1: config.go, sharing.go -- the mps section when present, else
    timeSlicing -- and replicas.go, consts.go: renameByDefault names it ``<name>.shared``)."""
    doc = yaml.safe_load(text) or {}
    sharing = doc.get("sharing") or {}
    how, section = ("mps", sharing["mps"]) if sharing.get("mps") is not None else (
        "time-slicing", sharing.get("timeSlicing") or {})
    out = {}
    for r in section.get("resources") or []:
        rename = r.get("rename") or (r["name"] + ".shared" if section.get("renameByDefault") else None)
        out[r["name"]] = {"replicas": int(r["replicas"]), "rename": rename, "how": how}
    return (doc.get("flags") or {}).get("migStrategy"), out


# -- pods -----------------------------------------------------------------------------------------
def app(pod: client.V1Pod) -> str:
    return (pod.metadata.labels or {}).get("app", "")


def live(pod: client.V1Pod) -> bool:
    return not pod.metadata.deletion_timestamp and (pod.status.phase if pod.status else None) not in ("Succeeded", "Failed")


def ready_since(pod: client.V1Pod) -> float | None:
    for c in (pod.status.conditions or []) if pod.status else []:
        if c.type == "Ready" and c.status == "True":
            return c.last_transition_time.timestamp() if c.last_transition_time else 0.0
    return None


def env_of(container, name: str, default: str | None = None) -> str | None:
    for e in container.env or []:
        if e.name == name:
            return e.value
    return default


def role(pod: client.V1Pod) -> str:
    """plugin, gfd, or the pod's app label: what runs in the pod, whoever deployed it."""
    names = {c.name for c in pod.spec.containers or []}
    for r, containers in ROLE_CONTAINERS.items():
        if names & set(containers):
            return r
    return app(pod)


def main_container(pod: client.V1Pod, r: str):
    return next(c for c in pod.spec.containers if c.name in ROLE_CONTAINERS[r])


def config_manager(pod: client.V1Pod):
    """The pod's config-manager (init or sidecar container), or None: no config file."""
    return next((c for c in [*(pod.spec.init_containers or []), *(pod.spec.containers or [])]
                 if (c.command or [])[:1] == ["config-manager"]), None)


class NodeAgent:
    def __init__(self, api: client.ApiClient, manifests: Path, namespace: str = "gpu-operator",
                 plugin_namespace: str = "nvidia-device-plugin"):
        self.core = client.CoreV1Api(api)
        self.manifests = manifests
        self.namespace = namespace
        self.plugin_namespace = plugin_namespace
        self.nodes: dict[str, client.V1Node] = {}
        self.pods: dict[str, client.V1Pod] = {}
        self.lock = threading.Lock()
        self.queue: list[tuple[float, str]] = []
        self.wake = threading.Condition(self.lock)
        self.mig_handled: dict[str, tuple[str, str]] = {}   # node -> (config, mig-manager pod uid)
        self.mig_busy: set[str] = set()
        self.validated: set[tuple[str, str]] = set()        # (validator pod uid, component)
        self.stop = threading.Event()

    # -- cache + queue ------------------------------------------------------------------------
    def on_node(self, kind: str, node: client.V1Node) -> None:
        with self.lock:
            if kind == "DELETED":
                self.nodes.pop(node.metadata.name, None)
                return
            self.nodes[node.metadata.name] = node
        if ANN_GPUS in (node.metadata.annotations or {}):
            self.enqueue(node.metadata.name)

    def on_pod(self, kind: str, pod: client.V1Pod) -> None:
        with self.lock:
            if kind == "DELETED":
                self.pods.pop(pod.metadata.uid, None)
            else:
                self.pods[pod.metadata.uid] = pod
        if pod.spec.node_name:
            self.enqueue(pod.spec.node_name)

    def enqueue(self, node: str, delay: float = 0.0) -> None:
        with self.wake:
            heapq.heappush(self.queue, (time.monotonic() + delay, node))
            self.wake.notify()

    def node_pods(self, node: str, app_name: str) -> list[client.V1Pod]:
        """The node's pods of one app (its label), or of one role (plugin, gfd)."""
        with self.lock:
            return [p for p in self.pods.values() if p.spec.node_name == node
                    and (role(p) == app_name if app_name in ROLE_CONTAINERS else app(p) == app_name)]

    def plugin_config(self, pod: client.V1Pod, node: client.V1Node) -> tuple[str, dict]:
        """(MIG strategy, replication) the plugin or GFD of ``pod`` runs with on ``node``."""
        strategy = env_of(main_container(pod, role(pod)), "MIG_STRATEGY")
        manager, replication = config_manager(pod), {}
        if manager is not None:
            srcdir = _env(manager).get("CONFIG_FILE_SRCDIR", "/available-configs")
            mount = next((m for m in manager.volume_mounts or [] if m.mount_path == srcdir), None)
            volume = next((v for v in pod.spec.volumes or [] if mount and v.name == mount.name), None)
            if volume is not None and volume.config_map is not None:
                try:
                    data = self.core.read_namespaced_config_map(volume.config_map.name, pod.metadata.namespace).data or {}
                except ApiException as exc:
                    if exc.status != 404:
                        raise
                    data = {}
                key = config_key(data, node.metadata.labels or {}, manager)
                if key in data:
                    flag, replication = parse_plugin_config(data[key])
                    strategy = strategy or flag
        return strategy or "none", replication

    def work(self) -> None:
        while not self.stop.is_set():
            with self.wake:
                while not self.queue or self.queue[0][0] > time.monotonic():
                    self.wake.wait(timeout=(self.queue[0][0] - time.monotonic()) if self.queue else 1.0)
                    if self.stop.is_set():
                        return
                _, name = heapq.heappop(self.queue)
                if any(n == name for _, n in self.queue if _ <= time.monotonic()):
                    continue  # a newer entry for the same node is due: handle it once
            try:
                self.reconcile(name)
            except ApiException as exc:
                log.warning("%s: %s %s", name, exc.status, exc.reason)
                self.enqueue(name, 1.0)
            except Exception:  # noqa: BLE001 - keep the agent alive; the next event retries
                log.exception("%s: reconcile failed", name)
                self.enqueue(name, 1.0)

    # -- one node ------------------------------------------------------------------------------
    def reconcile(self, name: str) -> None:
        node = self.nodes.get(name)
        hw = hardware(node) if node else None
        if hw is None:
            return
        self.break_operands(node)
        self.device_plugin(node, hw)
        self.feature_discovery(node, hw)
        self.validator(node)
        self.mig_manager(node)

    def break_operands(self, node: client.V1Node) -> None:
        broken = dict(item.split("=", 1) for item in
                      filter(None, (node.metadata.annotations or {}).get(ANN_BROKEN, "").split(",")))
        for app_name, how in broken.items():
            for pod in self.node_pods(node.metadata.name, app_name):
                if live(pod) and (pod.metadata.annotations or {}).get(ANN_SIMULATE) != how:
                    self.core.patch_namespaced_pod(pod.metadata.name, pod.metadata.namespace,
                                                   {"metadata": {"annotations": {ANN_SIMULATE: how}}})

    def device_plugin(self, node: client.V1Node, hw: dict) -> None:
        name = node.metadata.name
        status = node.status
        capacity = {k: int(str(v)) for k, v in (status.capacity or {}).items() if k.startswith("nvidia.com/")}
        alloc = {k: int(str(v)) for k, v in (status.allocatable or {}).items() if k.startswith("nvidia.com/")}
        plugins = [p for p in self.node_pods(name, "plugin") if live(p) and ready_since(p) is not None]
        registered = None
        if not plugins:
            want_cap, want_alloc = capacity, {k: 0 for k in capacity}
        else:
            waited = time.time() - max(ready_since(p) for p in plugins)
            if waited < REGISTER_S:
                self.enqueue(name, REGISTER_S - waited + 0.05)
                return
            strategy, replication = self.plugin_config(plugins[0], node)
            registered = json.dumps({"strategy": strategy, "replication": replication}, sort_keys=True)
            lost = {int(i) for i in (node.metadata.annotations or {}).get(ANN_LOST, "").split(",") if i}
            fresh = plugin_resources(hw, strategy, replication=replication)
            want_cap = {**{k: 0 for k in capacity}, **fresh}
            want_alloc = {**{k: 0 for k in capacity}, **{k: 0 for k in fresh},
                          **plugin_resources(hw, strategy, lost, replication)}
        if registered is not None and (node.metadata.annotations or {}).get(ANN_PLUGIN) != registered:
            self.core.patch_node(name, {"metadata": {"annotations": {ANN_PLUGIN: registered}}})
        if want_cap != capacity or want_alloc != alloc:
            self.core.patch_node_status(name, {"status": {
                "capacity": {k: str(v) for k, v in want_cap.items()},
                "allocatable": {k: str(v) for k, v in want_alloc.items()}}})
            log.info("%s: device plugin advertises %s", name, want_alloc)

    def feature_discovery(self, node: client.V1Node, hw: dict) -> None:
        pods = [p for p in self.node_pods(node.metadata.name, "gfd") if live(p) and ready_since(p) is not None]
        if not pods:
            return
        strategy, replication = self.plugin_config(pods[0], node)
        want = gfd_labels(hw, strategy, replication)
        have = node.metadata.labels or {}
        stale = {k: None for k in have if (k.startswith("nvidia.com/mig-") or k == "nvidia.com/mig.strategy")
                 and k not in want}
        patch = {**{k: v for k, v in want.items() if have.get(k) != v}, **stale}
        if patch:
            self.core.patch_node(node.metadata.name, {"metadata": {"labels": patch}})

    # -- the validator's workload pods -----------------------------------------------------------
    def validator(self, node: client.V1Node) -> None:
        for pod in self.node_pods(node.metadata.name, APP_VALIDATOR):
            if not live(pod) or pod.status.phase != "Running" or (pod.metadata.annotations or {}).get(ANN_SIMULATE):
                continue
            for component, (workload_app, manifest) in WORKLOADS.items():
                init = next((c for c in pod.spec.init_containers or [] if c.name == f"{component}-validation"), None)
                key = (pod.metadata.uid, component)
                if init is None or key in self.validated:
                    continue
                self.validated.add(key)
                if (env_of(init, "WITH_WORKLOAD", "true") or "").lower() != "true":
                    continue
                newer = [w for w in self.node_pods(node.metadata.name, workload_app)
                         if w.metadata.creation_timestamp >= pod.metadata.creation_timestamp]
                if not newer:
                    self.create_workload(pod, node, workload_app, manifest)

    def create_workload(self, validator: client.V1Pod, node: client.V1Node, workload_app: str, manifest: str) -> None:
        body = yaml.safe_load((self.manifests / manifest).read_text())
        ns = validator.metadata.namespace
        for old in self.node_pods(node.metadata.name, workload_app):
            self._delete_pod(old)
        # owner references and tolerations of the validator DaemonSet (validator/main.go runWorkload)
        ds = client.AppsV1Api(self.core.api_client).read_namespaced_daemon_set(APP_VALIDATOR, ns)
        body["metadata"]["namespace"] = ns
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": r.api_version, "kind": r.kind, "name": r.name, "uid": r.uid,
             "controller": r.controller, "blockOwnerDeletion": r.block_owner_deletion}
            for r in ds.metadata.owner_references or []]
        body["spec"]["tolerations"] = [t.to_dict() for t in ds.spec.template.spec.tolerations or []]
        body["spec"]["tolerations"] = [{k: v for k, v in {"key": t["key"], "operator": t["operator"],
                                        "value": t["value"], "effect": t["effect"]}.items() if v is not None}
                                       for t in body["spec"]["tolerations"]]
        body["spec"]["nodeName"] = node.metadata.name
        image = validator.spec.containers[0].image
        for c in [*body["spec"].get("initContainers", []), *body["spec"]["containers"]]:
            c["image"] = image
        if workload_app == WORKLOADS["plugin"][0]:
            # the first init container asks one device: a MIG resource if the node has one, else
            # a whole GPU (validator/main.go runWorkload, getGPUResourceName)
            offered = sorted(k for k, v in (node.status.allocatable or {}).items()
                             if k.startswith("nvidia.com/") and int(str(v)) > 0)
            res = next((r for r in offered if r.startswith("nvidia.com/mig-")), offered[0] if offered else None)
            if res is None:
                log.info("%s: plugin validation: unable to find any allocatable GPU resource", node.metadata.name)
                return
            body["spec"]["initContainers"][0]["resources"] = {"limits": {res: "1"}, "requests": {res: "1"}}
        self.core.create_namespaced_pod(ns, body)
        log.info("%s: %s created by the validator", node.metadata.name, workload_app)

    def _delete_pod(self, pod: client.V1Pod) -> None:
        try:
            self.core.delete_namespaced_pod(pod.metadata.name, pod.metadata.namespace)
        except ApiException as exc:
            if exc.status != 404:
                raise

    # -- the MIG manager -------------------------------------------------------------------------
    def mig_manager(self, node: client.V1Node) -> None:
        name = node.metadata.name
        managers = [p for p in self.node_pods(name, APP_MIG) if live(p) and p.status.phase == "Running"]
        config = (node.metadata.labels or {}).get(LABEL_CONFIG)
        if not managers or not config:
            return
        key = (config, managers[0].metadata.uid)
        with self.lock:
            if self.mig_handled.get(name) == key or name in self.mig_busy:
                return
            self.mig_busy.add(name)
        threading.Thread(target=self.reconfigure, args=(name, config, managers[0], key), daemon=True).start()

    def reconfigure(self, name: str, config: str, manager: client.V1Pod, key: tuple[str, str]) -> None:
        try:
            self._reconfigure(name, config, manager)
        except Exception:  # noqa: BLE001
            log.exception("%s: reconfigure to %s failed", name, config)
        finally:
            with self.lock:
                self.mig_handled[name] = key
                self.mig_busy.discard(name)
            self.enqueue(name)

    def _set_labels(self, name: str, labels: dict) -> None:
        self.core.patch_node(name, {"metadata": {"labels": labels}})

    def _reconfigure(self, name: str, config: str, manager: client.V1Pod) -> None:
        node = self.core.read_node(name)
        hw = hardware(node)
        volume = next((v for v in manager.spec.volumes or [] if v.name == "mig-parted-config"), None)
        try:
            if volume is None or volume.config_map is None:
                raise migparted.MigPartedError("no mig-parted-config volume in the mig-manager pod")
            cm = self.core.read_namespaced_config_map(volume.config_map.name, manager.metadata.namespace)
            layout = migparted.apply(migparted.load((cm.data or {}).get("config.yaml", "")), config,
                                     gpu_of(hw), hw["layout"])
        except (migparted.MigPartedError, ApiException) as exc:
            log.info("%s: %s invalid: %s", name, config, exc)
            self._set_labels(name, {LABEL_STATE: "failed"})
            return
        if layout == hw["layout"]:
            log.info("%s: selected MIG config %s is already applied", name, config)
            self._set_labels(name, {LABEL_STATE: "success"})
            return
        deployed = {k: (node.metadata.labels or {}).get(k, "") for k in CLIENT_DEPLOY_LABELS}
        self._set_labels(name, {LABEL_STATE: "pending",
                                **{k: "false" if v == "false" else "paused-for-mig-change" for k, v in deployed.items()}})
        restore = {k: "false" if v == "false" else "true" for k, v in deployed.items()}
        deadline = time.monotonic() + 300
        while any(live(p) or p.metadata.deletion_timestamp for a in CLIENT_APPS for p in self.node_pods(name, a)):
            if time.monotonic() > deadline:
                self._set_labels(name, {**restore, LABEL_STATE: "failed"})
                return
            time.sleep(0.2)
        for workload_app, _ in WORKLOADS.values():
            for pod in self.node_pods(name, workload_app):
                self._delete_pod(pod)
        time.sleep(REPARTITION_S)
        node = self.core.read_node(name)
        if (node.metadata.annotations or {}).get(ANN_IN_USE):
            log.info("%s: In use by another client: %s", name, node.metadata.annotations[ANN_IN_USE])
            self._set_labels(name, {**restore, LABEL_STATE: "failed"})
            return
        hw["layout"] = layout
        self.core.patch_node(name, {"metadata": {"annotations": {ANN_GPUS: json.dumps(hw)}}})
        for pod in self.node_pods(name, APP_VALIDATOR):
            self._delete_pod(pod)
        self._set_labels(name, restore)
        self._set_labels(name, {LABEL_STATE: "success"})
        log.info("%s: MIG config %s applied", name, config)

    # -- run ----------------------------------------------------------------------------------
    def run(self) -> None:
        threads = [
            threading.Thread(target=informer.run, args=(self.core.list_node, self.on_node, self.stop),
                             kwargs={"name": "nodes"}, daemon=True),
            *(threading.Thread(target=informer.run, args=(self.core.list_namespaced_pod, self.on_pod, self.stop),
                               kwargs={"name": f"pods {ns}", "namespace": ns}, daemon=True)
              for ns in (self.namespace, self.plugin_namespace)),
        ]
        for t in threads:
            t.start()
        self.work()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.cluster.nodeagent", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--validator-manifests", required=True, type=Path,
                        help="NVIDIA's validator/*.yaml (the gpu-operator module)")
    parser.add_argument("--namespace", default="gpu-operator")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from testbed.kube import client_for
    NodeAgent(client_for(args.kubeconfig), args.validator_manifests, args.namespace).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
