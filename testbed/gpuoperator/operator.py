"""NVIDIA's GPU Operator installed into the test bed as a platform team installs it: the chart
rendered by a real Helm with the article's values, its CRDs and objects applied, and the real
controller (built from its Go module) reconciling against the bed's kube-apiserver.

The controller runs as a bed process, not in a pod (KWOK runs no containers): the chart's
``gpu-operator`` Deployment still exists and KWOK keeps its pod Running, while the process gets
the container's args and environment from that same rendered Deployment. It reads its operand
assets from ``/opt/gpu-operator`` and the host's ``/host-etc/os-release``
(controllers/state_manager.go addState, controllers/object_controls.go parseOSRelease); both are
laid out in a private mount namespace on a tmpfs root (``chroot-run.sh``), so nothing is written
outside the bed's state folder.
"""
from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import yaml
from kubernetes import client, dynamic
from kubernetes.client.rest import ApiException

from testbed import kube
from testbed.gpuoperator import binaries

HERE = Path(__file__).resolve().parent
NAMESPACE = "gpu-operator"
RELEASE = "gpu-operator"

#: The article's Helm values (shared/reference/seed-digest.md, "GPU Operator"): the driver is on
#: the hosts, vGPU/VFIO/sandbox device plugins off, MIG strategy mixed, the driver validator's
#: DISABLE_DEV_CHAR_SYMLINK_CREATION, the GPU workers' taint tolerated. NFD's subchart is not
#: deployed (no NFD here): the bed labels the nodes as NFD would (platform.py).
ARTICLE_VALUES: dict = {
    "nfd": {"enabled": False},
    "driver": {"enabled": False},
    "vgpuDeviceManager": {"enabled": False},
    "vfioManager": {"enabled": False},
    "sandboxDevicePlugin": {"enabled": False},
    "mig": {"strategy": "mixed"},
    "validator": {"driver": {"env": [{"name": "DISABLE_DEV_CHAR_SYMLINK_CREATION", "value": "true"}]}},
    "daemonsets": {"tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
}

#: what the operator's node reads as /host-etc/os-release: the article's RED OS control plane
HOST_OS_RELEASE = ('NAME="RED OS"\nVERSION="7.3.4 (MUROM)"\nID="redos"\nID_LIKE="rhel centos fedora"\n'
                   'VERSION_ID="7.3"\nPRETTY_NAME="RED OS MUROM (7.3.4)"\n')


class OperatorError(RuntimeError):
    pass


def merge_values(*layers: dict) -> dict:
    out: dict = {}
    for layer in layers:
        for k, v in layer.items():
            out[k] = merge_values(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def render(values: dict, *, namespace: str = NAMESPACE, kube_version: str = "v1.35.8") -> list[dict]:
    """``helm template`` of the operator's chart (CRDs included, hooks left out: the chart's
    CRD upgrade/cleanup Jobs need a running image)."""
    folder = binaries.bin_dir()
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="gpuop-values-") as f:
        yaml.safe_dump(values, f)
        f.flush()
        result = subprocess.run(
            [str(folder / "helm"), "template", RELEASE, str(binaries.chart_dir()), "--namespace", namespace,
             "--include-crds", "--no-hooks", "--kube-version", kube_version, "--values", f.name],
            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise OperatorError(f"helm template failed (rc={result.returncode}): {result.stderr.strip()[-2000:]}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def nfd_crds() -> list[dict]:
    """NFD's CRDs from the chart's subchart, so the chart's NodeFeatureRule can be applied."""
    path = binaries.chart_dir() / "charts" / "node-feature-discovery" / "crds" / "nfd-api-crds.yaml"
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _key(obj: dict) -> tuple[str, str]:
    return obj["kind"], obj["metadata"]["name"]


def merge_patch(old, new):
    """The JSON merge patch (RFC 7386) that turns ``old`` into ``new``: what ``helm upgrade``
    sends for a field the new rendering dropped is null, so the field goes."""
    if not (isinstance(old, dict) and isinstance(new, dict)):
        return new
    patch = {k: None for k in old if k not in new}
    for k, v in new.items():
        if k not in old:
            patch[k] = v
        elif old[k] != v:
            patch[k] = merge_patch(old[k], v)
    return patch


def apply(api: client.ApiClient, objects: list[dict], *, namespace: str = NAMESPACE, timeout: float = 60,
          previous: list[dict] = ()) -> None:
    """As ``helm install`` creates them -- CRDs first (and wait until the API serves them), then
    everything else in the release namespace -- or, with the ``previous`` rendering, as
    ``helm upgrade`` changes them."""
    before = {_key(o): o for o in previous}
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    dyn = dynamic.DynamicClient(api)
    for crd in crds:
        _apply_one(dyn, crd, None, before.get(_key(crd)))
    kube.wait_crds_established(api, [c["metadata"]["name"] for c in crds], timeout)
    dyn = dynamic.DynamicClient(api)  # fresh discovery: the new kinds
    for obj in objects:
        if obj["kind"] != "CustomResourceDefinition":
            _apply_one(dyn, obj, namespace, before.get(_key(obj)))


def _apply_one(dyn: dynamic.DynamicClient, obj: dict, namespace: str | None, previous: dict | None) -> None:
    """Create as ``helm install`` does (a POST of the rendered object: the API server prunes the
    chart's ``null`` fields against the CRD schema); an existing one gets the merge patch from its
    previous rendering (or the whole object when there is none)."""
    resource = dyn.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    ns = (obj["metadata"].get("namespace") or namespace) if resource.namespaced else None
    try:
        try:
            resource.create(body=obj, namespace=ns)
        except ApiException as exc:
            if exc.status != 409:
                raise
            body = merge_patch(previous, obj) if previous is not None else obj
            resource.patch(body=body, name=obj["metadata"]["name"], namespace=ns,
                           content_type="application/merge-patch+json")
    except ApiException as exc:
        raise OperatorError(f"applying {obj['kind']} {obj['metadata']['name']}: {exc.status} {exc.reason}: "
                            f"{(exc.body or '')[:500]}") from None


def install(api: client.ApiClient, values: dict, *, namespace: str = NAMESPACE) -> list[dict]:
    """Namespace (privileged, as NVIDIA's install guide asks where Pod Security is enforced),
    the chart's CRDs and objects, NFD's CRDs. Returns the rendered objects."""
    kube.create_or_update(client.CoreV1Api(api).create_namespace, client.CoreV1Api(api).patch_namespace, {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}})
    objects = render(values, namespace=namespace)
    apply(api, [*nfd_crds(), *objects], namespace=namespace)
    return objects


def upgrade(api: client.ApiClient, previous: list[dict], values: dict, *, namespace: str = NAMESPACE) -> list[dict]:
    """``helm upgrade``: apply the newly rendered objects, delete those the release no longer
    renders (e.g. a ConfigMap of ``migManager.config.create``). Returns the new objects."""
    objects = render(values, namespace=namespace)
    apply(api, objects, namespace=namespace, previous=previous)
    keep = {_key(o) for o in objects}
    dyn = dynamic.DynamicClient(api)
    for o in previous:
        if _key(o) not in keep:
            resource = dyn.resources.get(api_version=o["apiVersion"], kind=o["kind"])
            try:
                resource.delete(name=o["metadata"]["name"], namespace=namespace if resource.namespaced else None)
            except ApiException as exc:
                if exc.status != 404:
                    raise
    return objects


def controller_container(objects: list[dict]) -> dict:
    """The gpu-operator container of the chart's Deployment."""
    for o in objects:
        if o["kind"] == "Deployment" and o["metadata"]["name"] == RELEASE:
            return next(c for c in o["spec"]["template"]["spec"]["containers"] if c["name"] == RELEASE)
    raise OperatorError("the rendered chart has no gpu-operator Deployment")


def controller_env(container: dict, namespace: str) -> dict[str, str]:
    """The container's environment as the kubelet would give it (fieldRef namespace resolved)."""
    env = {}
    for e in container.get("env") or []:
        ref = ((e.get("valueFrom") or {}).get("fieldRef") or {}).get("fieldPath")
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif ref == "metadata.namespace":
            env[e["name"]] = namespace
    return env


def controller_argv(container: dict, *, metrics_port: int, probe_port: int) -> list[str]:
    """The container's args, with the listen addresses moved to free loopback ports."""
    keep = [a for a in container.get("args") or []
            if not a.startswith(("--metrics-bind-address", "--health-probe-bind-address"))]
    return [*keep, f"--metrics-bind-address=127.0.0.1:{metrics_port}",
            f"--health-probe-bind-address=127.0.0.1:{probe_port}"]


def service_account(api: client.ApiClient, folder: Path, ca_cert: Path, namespace: str = NAMESPACE) -> Path:
    """What the kubelet mounts into the operator's pod: a token of the chart's ``gpu-operator``
    ServiceAccount (TokenRequest), the cluster CA, the namespace. The controller then runs with
    the chart's own RBAC, as in the cluster."""
    token = client.CoreV1Api(api).create_namespaced_service_account_token(
        RELEASE, namespace, {"spec": {"expirationSeconds": 86400}}).status.token
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "token").write_text(token)
    (folder / "ca.crt").write_bytes(ca_cert.read_bytes())
    (folder / "namespace").write_text(namespace)
    return folder


def launcher(state_dir: Path, sa_folder: Path, argv: list[str]) -> list[str]:
    """The command that runs the controller in its private mount namespace."""
    folder = binaries.bin_dir()
    root = state_dir / "gpu-operator-root"
    root.mkdir(parents=True, exist_ok=True)
    (state_dir / "host-os-release").write_text(HOST_OS_RELEASE)
    return ["unshare", "--mount", "--propagation", "private", "--", "bash", str(HERE / "chroot-run.sh"),
            str(root), str(binaries.module_dir()), str(folder / "gpu-operator"), str(sa_folder),
            str(state_dir / "host-os-release"), "--", *argv]


def controller_process_env(objects: list[dict], server: str, namespace: str = NAMESPACE) -> dict[str, str]:
    """The container's environment plus what the kubelet adds for in-cluster clients."""
    host, port = server.removeprefix("https://").rsplit(":", 1)
    env = controller_env(controller_container(objects), namespace)
    return {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "KUBERNETES_SERVICE_HOST": host,
            "KUBERNETES_SERVICE_PORT": port, **env}


if __name__ == "__main__":  # `python -m testbed.gpuoperator.operator`: print the rendered chart
    yaml.safe_dump_all(render(merge_values(ARTICLE_VALUES)), sys.stdout)
