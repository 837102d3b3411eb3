"""What the AI Conformance checks (tests/cluster/test_aiconformance.py) read of the cluster: the
driver and CUDA versions a GPU node advertises (DRA ResourceSlice attributes first, then GPU
Feature Discovery's labels), the GPU sharing it offers, the DRA API and driver objects, and
Kubeflow Trainer's TrainJob (CRD, webhook, controller)."""
from __future__ import annotations

from gpuconform.cluster import nodes
from gpuconform.cluster.connect import Cluster
from gpuconform.cluster.errors import ClusterError, Forbidden
from gpuconform.cluster.waiting import WaitTimeout, watch_one

#: GFD (k8s-device-plugin internal/lm) labels and the NVIDIA DRA driver's device attributes
#: (k8s-dra-driver-gpu: driverVersion, cudaDriverVersion) of the driver and the CUDA version
GFD_LABELS = {"driver": "nvidia.com/cuda.driver-version.full", "cuda": "nvidia.com/cuda.runtime-version.full"}
DRA_ATTRIBUTES = {"driver": "driverVersion", "cuda": "cudaDriverVersion"}
DRA = "/apis/resource.k8s.io/v1"
TRAINJOB_CRD = "trainjobs.trainer.kubeflow.org"
TRAINER = "/apis/trainer.kubeflow.org/v1alpha1"


def same_version(a: str, b: str) -> bool:
    """580.95.05 (nvidia-smi) is 580.95.5 (a DRA semver attribute); 13.0 is 13.0.0."""
    def parts(v: str) -> tuple[int, ...]:
        out = [int(p) for p in v.strip().split(".")]
        while len(out) > 1 and out[-1] == 0:
            out.pop()
        return tuple(out)
    try:
        return parts(a) == parts(b)
    except ValueError:
        return a.strip() == b.strip()


def resource_slices(cluster: Cluster, node: str, driver: str) -> list[dict]:
    doc = cluster.get_json(f"{DRA}/resourceslices", {"fieldSelector": f"spec.nodeName={node},spec.driver={driver}"},
                           what=f"listing ResourceSlices of {driver} on {node}", missing_ok=True)
    return (doc or {}).get("items", [])


def advertised_version(node: dict, slices: list[dict], kind: str) -> tuple[str, str | None]:
    """(where, version) the node advertises for ``kind`` (driver, cuda): a DRA device attribute
    when its driver publishes one, else GFD's label; version None when neither does."""
    for s in slices:
        for device in (s.get("spec") or {}).get("devices") or []:
            for key, value in (device.get("attributes") or {}).items():
                if key.rsplit("/", 1)[-1] == DRA_ATTRIBUTES[kind]:
                    version = value.get("version") or value.get("string")
                    return f"ResourceSlice {s['metadata']['name']} device {device.get('name')} {key}", version
    return f"node label {GFD_LABELS[kind]}", nodes.labels(node).get(GFD_LABELS[kind])


def sharing_offered(gpu_nodes) -> dict[str, list[str]]:
    """node -> the shared or partitioned GPU resources it offers: MIG resources (mixed), MIG
    devices as nvidia.com/gpu (single: gpu.product ``-MIG-``), replicas > 1 (time-slicing, MPS)."""
    out: dict[str, list[str]] = {}
    for n in gpu_nodes:
        labels, offered = nodes.labels(n), []
        offered += [f"{r} x{c}" for r, c in nodes.gpu_allocatable(n).items() if r.startswith("nvidia.com/mig-")]
        if "-MIG-" in labels.get("nvidia.com/gpu.product", "") and nodes.gpu_allocatable(n).get("nvidia.com/gpu"):
            offered.append(f"nvidia.com/gpu x{nodes.gpu_allocatable(n)['nvidia.com/gpu']} (MIG single)")
        offered += [f"{k.removesuffix('.replicas')} {labels.get(k.removesuffix('.replicas') + '.sharing-strategy')} "
                    f"x{v} replicas" for k, v in labels.items() if k.endswith(".replicas") and v.isdigit() and int(v) > 1]
        if offered:
            out[nodes.name(n)] = offered
    return out


def shared_resource(gpu_nodes) -> str | None:
    """A resource of a shared or partitioned device to run a pod on: the first MIG resource,
    else a replicated one (time-slicing/MPS: nvidia.com/gpu or its renamed ``.shared``)."""
    migs = nodes.mig_resources_offered(gpu_nodes)
    if migs:
        return next(iter(migs))
    for n in gpu_nodes:
        labels = nodes.labels(n)
        for k, v in labels.items():
            if k.endswith(".replicas") and v.isdigit() and int(v) > 1:
                res = k.removesuffix(".replicas")
                alloc = (n.get("status") or {}).get("allocatable") or {}
                return res if res in alloc else next((r for r in alloc if r.startswith(res + ".")), res)
    return None


def dra_api_versions(cluster: Cluster) -> list[str]:
    doc = cluster.get_json("/apis/resource.k8s.io", what="discovering resource.k8s.io", missing_ok=True)
    return [v["version"] for v in (doc or {}).get("versions", [])]


def dra_driver_objects(cluster: Cluster, driver: str) -> tuple[list[str], list[str]]:
    """(DeviceClasses whose selectors name ``driver``, ResourceSlices it publishes)."""
    classes = (cluster.get_json(f"{DRA}/deviceclasses", what="listing DeviceClasses", missing_ok=True) or {})
    slices = (cluster.get_json(f"{DRA}/resourceslices", {"fieldSelector": f"spec.driver={driver}"},
                               what=f"listing ResourceSlices of {driver}", missing_ok=True) or {})
    named = [c["metadata"]["name"] for c in classes.get("items", []) if f"'{driver}'" in str(c.get("spec"))
             or f'"{driver}"' in str(c.get("spec"))]
    return named, [s["metadata"]["name"] for s in slices.get("items", [])]


def crd_established(cluster: Cluster, name: str) -> str | None:
    """None when the CRD is Established, else what is wrong."""
    crd = cluster.get_json(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}",
                           what=f"reading CRD {name}", missing_ok=True)
    if crd is None:
        return f"CRD {name} is not registered"
    cond = next((c for c in (crd.get("status") or {}).get("conditions") or [] if c.get("type") == "Established"), {})
    return None if cond.get("status") == "True" else f"CRD {name} not Established: {cond or 'no condition'}"


def trainjob(namespace: str, name: str, runtime: str, labels: dict[str, str]) -> dict:
    """A TrainJob on the ClusterTrainingRuntime ``runtime``, carrying the run's ``labels``."""
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
            "spec": {"runtimeRef": {"name": runtime, "apiGroup": "trainer.kubeflow.org",
                                    "kind": "ClusterTrainingRuntime"}}}


def create_refusal(cluster: Cluster, body: dict) -> str | None:
    """Create ``body`` with server-side dry run: the API server's refusal, None if it accepted it."""
    ns = body["metadata"]["namespace"]
    try:
        cluster.request("POST", f"{TRAINER}/namespaces/{ns}/trainjobs", {"dryRun": "All"}, body=body,
                        what=f"creating TrainJob {body['metadata']['name']} (dry run)")
    except ClusterError as exc:
        if isinstance(exc, Forbidden) and "admission webhook" not in str(exc):
            raise  # no right to create TrainJobs: could not check
        return str(exc)
    return None


def _conditions(job: dict | None) -> dict[str, str]:
    return {c.get("type"): c.get("status") for c in ((job or {}).get("status") or {}).get("conditions") or []}


def run_trainjob(cluster: Cluster, body: dict, timeout: float) -> str:
    """Create the TrainJob and wait until its controller marks it Complete or Failed: "Complete",
    "Failed: <conditions>", "refused: <why>" or the wait's timeout with the last state seen. It is
    deleted afterwards."""
    ns, name = body["metadata"]["namespace"], body["metadata"]["name"]
    try:
        created = cluster.request("POST", f"{TRAINER}/namespaces/{ns}/trainjobs", body=body,
                                  what=f"creating TrainJob {name}")
    except ClusterError as exc:
        if isinstance(exc, Forbidden) and "admission webhook" not in str(exc):
            raise
        return f"refused: {exc}"
    try:
        job = watch_one(cluster, f"TrainJob {ns}/{name} to complete", f"{TRAINER}/namespaces/{ns}/trainjobs",
                        name=name, timeout=timeout, since=created,
                        condition=lambda j: j if {"Complete", "Failed"} & {t for t, v in _conditions(j).items()
                                                                          if v == "True"} else None,
                        describe=lambda j: f"conditions {_conditions(j) or 'none'}")
    except WaitTimeout as exc:
        return str(exc)
    finally:
        cluster.request("DELETE", f"{TRAINER}/namespaces/{ns}/trainjobs/{name}", what=f"deleting TrainJob {name}",
                        missing_ok=True)
    return "Complete" if _conditions(job).get("Complete") == "True" else f"Failed: {_conditions(job)}"
