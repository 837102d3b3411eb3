"""A stand-in for NVIDIA's dcgm-exporter on one simulated GPU worker: the bed's GPU Operator runs
its ``nvidia-dcgm-exporter`` DaemonSet, but KWOK pods run nothing, so this HTTP server answers
what that pod's ``:9400/metrics`` would for the node's simulated GPUs.

What it serves follows NVIDIA/dcgm-exporter: the metric names, types and help texts of its
default counters (``etc/default-counters.csv``: utilization, memory, temperature, power) and the
labels of each sample as its README's samples and Kubernetes mode show them -- ``gpu`` (the
device index), ``UUID``, ``device`` (``nvidia<N>``), ``modelName``, ``Hostname`` and
``DCGM_FI_DRIVER_VERSION``. Values are those of an idle GPU.

``per_device=False`` is the fault of an endpoint without per-device labels: what a Prometheus
``labeldrop`` of gpu/UUID/device, or a recording rule that sums over them, serves instead: one
sample per node.

From Python: ``with at_exporter_pods(api) as urls: ...`` (a selftest fixture does it): one stand-in
per pod of NVIDIA's ``nvidia-dcgm-exporter`` DaemonSet, answering at that pod's IP and port 9400,
where the API server's service proxy reaches the pod through the operator's own Service and the
Endpoints kube-controller-manager writes for it. In Kubernetes 1.35 that proxy resolves Endpoints
and proxies only to an address that is a pod's IP (kubernetes pkg/registry/core/service/storage/
storage.go, ResourceLocation and isValidAddress), so the stand-in must stand where the pod is."""
from __future__ import annotations

import contextlib
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

from kubernetes import client

from testbed.cluster.devices import device_uuid
from testbed.cluster.hardware import GPUS
from testbed.cluster.nodeagent import hardware

#: (field, type, help) of default-counters.csv, the ones an idle GPU reports
COUNTERS = (
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
)


def render(node: client.V1Node, per_device: bool = True) -> str:
    hw = hardware(node) or {"count": 0, "product": next(iter(GPUS)), "driver": ""}
    gpu, name = GPUS[hw["product"]], node.metadata.name
    idle = {"DCGM_FI_DEV_GPU_TEMP": 31, "DCGM_FI_DEV_POWER_USAGE": 71.5, "DCGM_FI_DEV_GPU_UTIL": 0,
            "DCGM_FI_DEV_MEM_COPY_UTIL": 0, "DCGM_FI_DEV_FB_FREE": gpu.memory_mib, "DCGM_FI_DEV_FB_USED": 0}
    out = []
    for field, kind, text in COUNTERS:
        out += [f"# HELP {field} {text}", f"# TYPE {field} {kind}"]
        if not per_device:
            out.append(f'{field}{{Hostname="{name}"}} {idle[field] * hw["count"]}')
            continue
        for i in range(hw["count"]):
            out.append(f'{field}{{gpu="{i}",UUID="{device_uuid("GPU", name, i)}",device="nvidia{i}",'
                       f'modelName="{gpu.smi_name}",Hostname="{name}",DCGM_FI_DRIVER_VERSION="{hw["driver"]}"}} '
                       f'{idle[field]}')
    return "\n".join(out) + "\n"


@contextlib.contextmanager
def serve(api: client.ApiClient, node: str, per_device: bool = True, host: str = "127.0.0.1",
          port: int = 0) -> Iterator[str]:
    """The exporter of ``node`` on ``host``:``port`` (0: a free one) while in the block; yields its URL."""
    core = client.CoreV1Api(api)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            if self.path != "/metrics":
                self.send_error(404)
                return
            body = render(core.read_node(node), per_device).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # quiet
            pass

    server = ThreadingHTTPServer((host, port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()



#: the DaemonSet's pod label and container port (gpu-operator assets/state-dcgm-exporter/0900_daemonset.yaml)
POD_LABEL, PORT = "app=nvidia-dcgm-exporter", 9400


@contextlib.contextmanager
def _address_on_loopback(ip: str) -> Iterator[None]:
    """KWOK gives pods addresses nothing answers at (its --cidr): while in the block, this machine
    holds ``ip`` on its loopback interface, so that a stand-in can listen there."""
    added = subprocess.run(["ip", "addr", "add", f"{ip}/32", "dev", "lo"], capture_output=True, text=True)
    if added.returncode != 0 and "File exists" not in added.stderr:
        raise RuntimeError(f"ip addr add {ip}/32 dev lo: {added.stderr.strip()}")
    try:
        yield
    finally:  # held already (a run that never got to remove it): left as found
        if added.returncode == 0:
            subprocess.run(["ip", "addr", "del", f"{ip}/32", "dev", "lo"], capture_output=True, text=True)


@contextlib.contextmanager
def at_exporter_pods(api: client.ApiClient, per_device: bool = True, answering: bool = True) -> Iterator[dict[str, str]]:
    """A stand-in at each running dcgm-exporter pod's IP and port while in the block; yields
    {pod: URL}. ``answering=False``: the pods' addresses are held but nothing listens, as when the
    exporter's process is down while its pod still runs (the API server's proxy is refused)."""
    pods = client.CoreV1Api(api).list_pod_for_all_namespaces(label_selector=POD_LABEL).items
    with contextlib.ExitStack() as stack:
        urls = {}
        for pod in pods:  # one stand-in an address: KWOK may give a new pod a deleted one's IP
            if pod.status.phase == "Running" and pod.status.pod_ip and not pod.metadata.deletion_timestamp and (
                    f"http://{pod.status.pod_ip}:{PORT}/metrics" not in urls.values()):
                stack.enter_context(_address_on_loopback(pod.status.pod_ip))
                urls[pod.metadata.name] = stack.enter_context(
                    serve(api, pod.spec.node_name, per_device, host=pod.status.pod_ip, port=PORT)) if answering else (
                    f"http://{pod.status.pod_ip}:{PORT}/metrics")
        yield urls
