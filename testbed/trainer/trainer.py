"""Kubeflow Trainer v2 and the JobSet controller it needs, installed into the test bed from their
pinned modules' own manifests, with the real controllers (built by build.sh) reconciling and
serving their admission webhooks against the bed's kube-apiserver.

As NVIDIA's GPU Operator controller (testbed/gpuoperator/operator.py), each controller runs as a
bed process, not in a pod (KWOK runs no containers): with the container args of its rendered
Deployment, the controller configuration of its rendered ConfigMap, a kubeconfig holding a token
of its own ServiceAccount (so it works with upstream's RBAC), and a private
``/tmp/k8s-webhook-server`` (pod-view-run.sh) where its webhook Secret is written as the kubelet mounts it.

How the API server reaches the webhooks: it resolves a webhook's Service through the Service's
EndpointSlices (the bed's kube-apiserver runs with ``--enable-aggregator-routing``,
testbed/cluster/controlplane.py), and each controller serves its webhook on this host's
address (its default-route interface's: an EndpointSlice may not hold a loopback one), on a free
port. The TLS name the API server checks is ``<service>.<namespace>.svc``, the name the
controllers' cert-controller issues their self-signed certificate for and whose CA it patches
into the webhook configurations' caBundle.

What differs from upstream's install, each for the bed (``for_the_bed``):

* the controllers' Deployments are not created: the bed process is their pod;
* the webhook Services (trainer manifests/base/manager/manager.yaml
  ``kubeflow-trainer-controller-manager``, jobset config/components/webhook/service.yaml
  ``webhook-service``) have no selector, and an EndpointSlice names the process's address and
  port: what the EndpointSlice controller would publish for the pod;
* the controller configuration (the ConfigMaps of trainer
  manifests/base/manager/controller_manager_config.yaml, jobset
  config/components/manager/controller_manager_config.yaml) gets the process's listen addresses
  (health, metrics, webhook: free ports) and its leader-election namespace (in a pod: its own);
* JobSet is installed from its own module (config/default, what its release manifests are built
  from) and the Trainer's overlays/manager without ``../../third-party/jobset`` (that kustomization
  fetches JobSet's release manifests from the network; the overlay's comment says to drop the line
  when JobSet is installed already);
* the ClusterTrainingRuntime (manifests/base/runtimes/torch_distributed.yaml) tolerates the GPU
  workers' taint: every node of the bed is tainted (control plane, GPU workers), it has no plain
  CPU worker for the runtime's pods.
"""
from __future__ import annotations

import base64
import copy
import dataclasses
import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import yaml
from kubernetes import client, dynamic

from testbed.cluster import binaries as cluster_binaries
from testbed.cluster.controlplane import ControlPlane, wait_http
from testbed.kube import create_or_update, ignore_not_found
from testbed.cluster.nodes import GPU_TAINT
from testbed.ports import LOOPBACK, free_port
from testbed.waiting import wait_for
from testbed.gpuoperator import operator
from testbed.trainer import binaries

HERE = Path(__file__).resolve().parent
#: the namespace of the bed's TrainJobs: what a platform team gives its training workloads. The
#: runtime's pods (no securityContext) are admitted by Pod Security "baseline", not "restricted".
TRAINJOB_NAMESPACE = "training"
RUNTIME = "torch-distributed"
#: the label the EndpointSlice controller puts on the slices of a Service (discovery/v1
#: LabelServiceName), and the one it leaves to others (LabelManagedBy)
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by"


@dataclasses.dataclass(frozen=True)
class Controller:
    """One controller of the install: its process, and the rendered objects it is started from."""
    process: str           # the bed process (logs/<process>.log) and the binary of build.sh
    namespace: str
    deployment: str        # the upstream Deployment whose pod the process is
    config_map: str        # its controller_manager_config.yaml
    webhook_service: str
    webhook_port: str      # the Service port (its name) the webhook configurations call
    secret: str            # the webhook Secret cert-controller fills

    @property
    def service_account(self) -> str:
        return self.deployment


JOBSET = Controller("jobset-controller", "jobset-system", "jobset-controller-manager", "jobset-manager-config",
                    "jobset-webhook-service", "", "jobset-webhook-server-cert")
TRAINER = Controller("trainer-controller-manager", "kubeflow-system", "kubeflow-trainer-controller-manager",
                     "kubeflow-trainer-config", "kubeflow-trainer-controller-manager", "webhook-server",
                     "kubeflow-trainer-webhook-cert")
CONTROLLERS = (JOBSET, TRAINER)


class TrainerError(RuntimeError):
    pass


# -- rendering ------------------------------------------------------------------------------------
def kustomize(folder: Path) -> list[dict]:
    """``kubectl kustomize`` of ``folder`` (the bed's kubectl, testbed/cluster/build-kubectl.sh)."""
    result = subprocess.run([str(cluster_binaries.kubectl()), "kustomize", str(folder)],
                            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise TrainerError(f"kubectl kustomize {folder} failed: {result.stderr.strip()[-2000:]}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def render_jobset() -> list[dict]:
    """JobSet's release install: its module's config/default."""
    return kustomize(binaries.bin_dir() / "jobset-manifests" / "default")


def render_trainer() -> list[dict]:
    """The Trainer's manifests/overlays/manager, JobSet left out (installed from its own module)."""
    with tempfile.TemporaryDirectory(prefix="trainer-manifests-") as tmp:
        tree = Path(tmp) / "manifests"
        shutil.copytree(binaries.bin_dir() / "trainer-manifests", tree)
        overlay = tree / "overlays" / "manager" / "kustomization.yaml"
        kustomization = yaml.safe_load(overlay.read_text())
        kustomization["resources"] = [r for r in kustomization["resources"] if r != "../../third-party/jobset"]
        overlay.write_text(yaml.safe_dump(kustomization))
        return kustomize(tree / "overlays" / "manager")


def runtime(name: str = RUNTIME) -> dict:
    """The ClusterTrainingRuntime ``name`` of the Trainer's manifests/overlays/runtimes, tolerating
    the GPU workers' taint (the bed has no untainted worker)."""
    found = next((o for o in kustomize(binaries.bin_dir() / "trainer-manifests" / "overlays" / "runtimes")
                  if o["kind"] == "ClusterTrainingRuntime" and o["metadata"]["name"] == name), None)
    if found is None:
        raise TrainerError(f"the Trainer's manifests have no ClusterTrainingRuntime {name}")
    for job in found["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = job["template"]["spec"]["template"]["spec"]
        pod.setdefault("tolerations", []).append({**GPU_TAINT, "operator": "Exists"})
    return found


def host_address() -> str:
    """The global IPv4 address of this host's default-route interface: the webhooks' endpoint.
    Not just any global address: other beds on the host add and remove interfaces of their own
    (a real node's CNI bridge, simulated hosts' veths)."""
    def ip_json(*args: str) -> list[dict]:
        out = subprocess.run(["ip", "-json", *args], capture_output=True, text=True, check=True, timeout=10).stdout
        return json.loads(out or "[]")
    for route in ip_json("-4", "route", "show", "default"):
        for link in ip_json("-4", "address", "show", "dev", route["dev"], "scope", "global"):
            for addr in link.get("addr_info") or []:
                if addr.get("local"):
                    return addr["local"]
    raise TrainerError("no global IPv4 address on this host's default-route interface for the webhooks' "
                       "EndpointSlices (an EndpointSlice may not name a loopback address)")


@dataclasses.dataclass
class Listen:
    """Where one controller process listens."""
    address: str
    webhook: int
    health: int
    metrics: int


def for_the_bed(objects: list[dict], controller: Controller, listen: Listen) -> list[dict]:
    """The rendered install as the bed applies it (module docstring): the Deployment left out,
    the webhook Service without selector plus the EndpointSlice of the process."""
    out = []
    for obj in objects:
        kind, name = obj["kind"], obj["metadata"]["name"]
        if kind == "Deployment" and name == controller.deployment:
            continue
        if kind == "Service" and name == controller.webhook_service:
            obj = copy.deepcopy(obj)
            obj["spec"].pop("selector", None)
            port = next(p for p in obj["spec"]["ports"] if p.get("name", "") == controller.webhook_port)
            out += [obj, {
                "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": f"{name}-bed", "namespace": controller.namespace,
                             "labels": {SERVICE_NAME_LABEL: name, MANAGED_BY_LABEL: "gpuconform-testbed"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": [listen.address], "conditions": {"ready": True}}],
                "ports": [{"name": port.get("name", ""), "port": listen.webhook, "protocol": "TCP"}]}]
            continue
        out.append(obj)
    return out


def controller_config(objects: list[dict], controller: Controller, listen: Listen) -> dict:
    """The rendered controller_manager_config.yaml with the process's listen addresses and
    leader-election namespace."""
    cm = next(o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == controller.config_map)
    cfg = yaml.safe_load(cm["data"]["controller_manager_config.yaml"])
    cfg.setdefault("health", {})["healthProbeBindAddress"] = f"{LOOPBACK}:{listen.health}"
    cfg.setdefault("metrics", {})["bindAddress"] = f"{LOOPBACK}:{listen.metrics}"
    cfg["webhook"] = {**(cfg.get("webhook") or {}), "host": listen.address, "port": listen.webhook}
    cfg.setdefault("leaderElection", {})["resourceNamespace"] = controller.namespace
    return cfg


def controller_args(objects: list[dict], controller: Controller, config_file: Path) -> list[str]:
    """The args of the Deployment's manager container, its --config pointing at ``config_file``."""
    deployment = next(o for o in objects if o["kind"] == "Deployment" and o["metadata"]["name"] == controller.deployment)
    container = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "manager")
    return [f"--config={config_file}" if a.startswith("--config=") else a for a in container.get("args") or []]


# -- the install ----------------------------------------------------------------------------------
class Trainer:
    """``Trainer(control_plane, api).install()``: JobSet, then the Trainer and its runtime, both
    controllers running; ``stop(TRAINER)`` / ``start(TRAINER)`` is the controller's outage and
    return; ``uninstall()`` stops them and deletes what install created."""

    def __init__(self, control_plane: ControlPlane, api: client.ApiClient):
        self.control_plane, self.api = control_plane, api
        self.rendered: dict[str, list[dict]] = {}
        self.listen: dict[str, Listen] = {}
        self.applied: list[dict] = []

    def folder(self, controller: Controller) -> Path:
        return self.control_plane.state_dir / controller.process

    def install(self, timeout: float = 120) -> "Trainer":
        address = host_address()
        create_or_update(client.CoreV1Api(self.api).create_namespace, client.CoreV1Api(self.api).patch_namespace, {
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": TRAINJOB_NAMESPACE, "labels": {"pod-security.kubernetes.io/enforce": "baseline"}}})
        try:
            for controller, render in ((JOBSET, render_jobset), (TRAINER, render_trainer)):
                self.rendered[controller.process] = render()
                self.listen[controller.process] = Listen(address, free_port(), free_port(), free_port())
                objects = for_the_bed(self.rendered[controller.process], controller, self.listen[controller.process])
                self.applied += objects
                operator.apply(self.api, objects, namespace=controller.namespace, timeout=timeout)
                self.start(controller, timeout)
            # the runtime passes the Trainer's validating webhook: created once that one answers
            body = runtime()
            wait_for(f"ClusterTrainingRuntime {RUNTIME} to pass the Trainer's webhook",
                     lambda: self.control_plane.supervisor.give_up_if_exited(TRAINER.process)
                     and operator.apply(self.api, [body], timeout=timeout) is None, timeout)
            self.applied.append(body)
        except BaseException:
            self.uninstall(timeout)
            raise
        return self

    def start(self, controller: Controller, timeout: float = 120) -> None:
        """The controller process, ready: its webhook Secret filled by cert-controller and
        written where the kubelet mounts it, its webhook serving (its /readyz)."""
        objects, listen, folder = self.rendered[controller.process], self.listen[controller.process], self.folder(controller)
        certs, sa = folder / "tmp" / "k8s-webhook-server" / "serving-certs", folder / "serviceaccount"
        certs.mkdir(parents=True, exist_ok=True)
        sa.mkdir(parents=True, exist_ok=True)
        (sa / "namespace").write_text(controller.namespace)
        config_file = folder / "controller_manager_config.yaml"
        config_file.write_text(yaml.safe_dump(controller_config(objects, controller, listen)))
        kubeconfig = folder / "kubeconfig"
        kubeconfig.write_text(self._token_kubeconfig(controller))
        binary = binaries.bin_dir() / controller.process
        supervisor = self.control_plane.supervisor
        supervisor.start(controller.process, [
            "unshare", "--mount", "--propagation", "private", "--", "bash", str(HERE / "pod-view-run.sh"),
            str(folder / "tmp"), str(sa), "--", str(binary), *controller_args(objects, controller, config_file)],
            env={"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp",
                 "KUBECONFIG": str(kubeconfig)})
        wait_for(f"{controller.process} to fill Secret {controller.namespace}/{controller.secret}",
                 lambda: supervisor.give_up_if_exited(controller.process) and self._mount_secret(controller, certs),
                 timeout)
        wait_http(supervisor, controller.process, f"http://{LOOPBACK}:{listen.health}/readyz", timeout)
        # the kubelet resyncs a secret volume: cert-controller may have rewritten the Secret
        # (two of its reconcilers race on the first fill) before it patched the caBundle
        self._mount_secret(controller, certs)

    def stop(self, controller: Controller) -> None:
        """The controller process stopped (its webhook no longer answers)."""
        self.control_plane.supervisor.stop(controller.process)

    def uninstall(self, timeout: float = 60) -> None:
        """The runtime first, while the Trainer runs (it holds the runtime's
        ``trainer.kubeflow.org/resource-in-use`` finalizer until no TrainJob uses it), then the
        controllers stopped and the rest deleted, webhook configurations before the CRDs; returns
        once their namespaces are gone."""
        dyn = dynamic.DynamicClient(self.api)
        body = self.applied[-1] if self.applied and self.applied[-1]["kind"] == "ClusterTrainingRuntime" else None
        if body is not None:
            runtimes = dyn.resources.get(api_version=body["apiVersion"], kind=body["kind"])
            _delete(runtimes, body)
            wait_for(f"ClusterTrainingRuntime {RUNTIME} to be deleted",
                     lambda: _gone(runtimes, body), timeout)
            self.applied.pop()
        for controller in reversed(CONTROLLERS):
            self.stop(controller)
        for obj in reversed(self.applied):
            _delete(dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"]), obj)
        namespaces = dyn.resources.get(api_version="v1", kind="Namespace")
        gone = [o for o in self.applied if o["kind"] == "Namespace"] + [{"metadata": {"name": TRAINJOB_NAMESPACE}}]
        _delete(namespaces, gone[-1])
        self.applied = []
        # a namespace being terminated refuses new objects: the next install waits for nothing
        wait_for("the Trainer's and JobSet's namespaces to be deleted",
                 lambda: all(_gone(namespaces, o) for o in gone), timeout)

    def _mount_secret(self, controller: Controller, certs: Path) -> bool:
        """The webhook Secret's keys as files in ``certs`` (the kubelet's secret volume), those that
        changed rewritten; False while cert-controller has not filled it yet."""
        data = client.CoreV1Api(self.api).read_namespaced_secret(controller.secret, controller.namespace).data or {}
        if not {"tls.crt", "tls.key"} <= set(data):
            return False
        for key, value in data.items():
            content = base64.b64decode(value)
            if not (certs / key).is_file() or (certs / key).read_bytes() != content:
                (certs / f".{key}.tmp").write_bytes(content)
                (certs / f".{key}.tmp").replace(certs / key)
        return True

    def _token_kubeconfig(self, controller: Controller) -> str:
        """A kubeconfig with a token of the controller's ServiceAccount (TokenRequest), as the
        in-cluster config of its pod would have."""
        token = client.CoreV1Api(self.api).create_namespaced_service_account_token(
            controller.service_account, controller.namespace, {"spec": {"expirationSeconds": 86400}}).status.token
        ca = self.control_plane.state_dir / "pki" / "ca.crt"
        return yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "bed",
            "clusters": [{"name": "bed", "cluster": {"server": self.control_plane.server,
                                                     "certificate-authority": str(ca)}}],
            "users": [{"name": controller.service_account, "user": {"token": token}}],
            "contexts": [{"name": "bed", "context": {"cluster": "bed", "user": controller.service_account}}]})


def _delete(resource, obj: dict) -> None:
    ignore_not_found(resource.delete, name=obj["metadata"]["name"],
                     namespace=obj["metadata"].get("namespace") if resource.namespaced else None)


def _gone(resource, obj: dict) -> bool:
    return ignore_not_found(resource.get, name=obj["metadata"]["name"]) is None
