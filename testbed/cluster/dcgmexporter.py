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

From Python: ``with serve(api, "gpu-worker-1") as url: ...`` (a selftest fixture does it)."""
from __future__ import annotations

import contextlib
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
def serve(api: client.ApiClient, node: str, per_device: bool = True) -> Iterator[str]:
    """The exporter of ``node`` on 127.0.0.1 (a free port) while in the block; yields its URL."""
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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    finally:
        server.shutdown()
        server.server_close()
