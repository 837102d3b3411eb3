"""The MIG manager of the simulated GPU workers: reacts to ``nvidia.com/mig.config`` like
NVIDIA's k8s-mig-manager does.

When a node's ``nvidia.com/mig.config`` differs from the config it last applied there, it sets
``nvidia.com/mig.config.state=pending``, "repartitions" the GPUs (a short delay), then writes
what GPU Feature Discovery and the device plugin would publish for the new config (the
``nvidia.com/mig-*`` labels, capacity/allocatable from the MIG catalog) and sets ``success``.
It sets ``failed`` instead (and changes nothing else) when the config does not exist for the
node's GPU model, or when the node carries the annotation
``testbed.gpuconform.io/simulate-mig=fail`` (a GPU in use, as on a real node).

On first sight of a node, its current config counts as applied. A relabel that the node's labels
and allocatable already match (the bed's reset) is taken as applied without a transition.

Run: ``python -m testbed.cluster.migmanager --kubeconfig K`` (the selftests start it).
"""
from __future__ import annotations

import argparse
import logging
import sys
import threading
import time

from kubernetes import client, watch

from gpuconform.mig import gpu_model
from gpuconform.mig.catalog import UnknownGpuModel, UnknownMigConfig, mig_config
from testbed.cluster.platform import GpuWorker, gpu_node_labels, gpu_node_resources

LABEL_CONFIG = "nvidia.com/mig.config"
LABEL_STATE = "nvidia.com/mig.config.state"
ANN_FAIL = "testbed.gpuconform.io/simulate-mig"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
REPARTITION_S = 1.0

log = logging.getLogger("migmanager")


def _worker(node: client.V1Node, config: str) -> GpuWorker:
    labels = node.metadata.labels or {}
    model = gpu_model(labels.get("nvidia.com/gpu.product", ""))
    mig_config(model, config)  # raises UnknownMigConfig
    return GpuWorker(node.metadata.name, config, model.key, int(labels.get("nvidia.com/gpu.count", "0") or 0))


def published(node: client.V1Node, worker: GpuWorker) -> tuple[dict, dict]:
    """(label patch, resources) the node must carry once ``worker.mig_config`` is applied."""
    want = gpu_node_labels(worker)
    mig_keys = {k: v for k, v in want.items() if k.startswith("nvidia.com/mig-") or k == "nvidia.com/gpu.replicas"}
    stale = {k: None for k in (node.metadata.labels or {}) if k.startswith("nvidia.com/mig-") and k not in want}
    return {**mig_keys, **stale}, gpu_node_resources(worker)


def already_applied(node: client.V1Node, worker: GpuWorker) -> bool:
    labels, resources = published(node, worker)
    have = node.metadata.labels or {}
    alloc = (node.status.allocatable or {}) if node.status else {}
    gpu = {k: v for k, v in resources.items() if k.startswith("nvidia.com/")}
    have_gpu = {k: v for k, v in alloc.items() if k.startswith("nvidia.com/") and str(v) != "0"}
    return (all(have.get(k) == v for k, v in labels.items())
            and have_gpu == {k: v for k, v in gpu.items() if v != "0"}
            and have.get(LABEL_STATE) == "success")


class MigManager:
    def __init__(self, api: client.ApiClient, delay: float = REPARTITION_S):
        self.core = client.CoreV1Api(api)
        self.delay = delay
        self.applied: dict[str, str] = {}
        self.busy: set[str] = set()
        self.lock = threading.Lock()

    def handle(self, node: client.V1Node) -> None:
        name = node.metadata.name
        labels = node.metadata.labels or {}
        if (node.metadata.annotations or {}).get(KWOK_NODE_ANNOTATION) != "fake" or LABEL_CONFIG not in labels:
            return
        config = labels[LABEL_CONFIG]
        with self.lock:
            if name not in self.applied:
                self.applied[name] = config
                return
            if self.applied[name] == config or name in self.busy:
                return
            self.busy.add(name)
        threading.Thread(target=self.reconfigure, args=(name, config), daemon=True).start()

    def reconfigure(self, name: str, config: str) -> None:
        try:
            node = self.core.read_node(name)
            try:
                worker = _worker(node, config)
            except (UnknownGpuModel, UnknownMigConfig) as exc:
                worker, why = None, str(exc)
            if worker is not None and already_applied(node, worker):
                log.info("%s: %s already in place", name, config)
                return
            self.core.patch_node(name, {"metadata": {"labels": {LABEL_STATE: "pending"}}})
            time.sleep(self.delay)
            node = self.core.read_node(name)
            if (node.metadata.labels or {}).get(LABEL_CONFIG) != config:
                return  # relabelled meanwhile: the next event handles it
            if worker is None or (node.metadata.annotations or {}).get(ANN_FAIL) == "fail":
                why = why if worker is None else "GPU in use by another client (simulated)"
                self.core.patch_node(name, {"metadata": {"labels": {LABEL_STATE: "failed"}}})
                log.info("%s: %s failed: %s", name, config, why)
                return
            labels, resources = published(node, worker)
            gone = {k: None for k in (node.status.allocatable or {}) if k.startswith("nvidia.com/") and k not in resources}
            self.core.patch_node_status(name, {"status": {"capacity": {**resources, **gone},
                                                          "allocatable": {**resources, **gone}}})
            self.core.patch_node(name, {"metadata": {"labels": {**labels, LABEL_STATE: "success"}}})
            log.info("%s: %s applied", name, config)
        finally:
            with self.lock:
                self.applied[name] = config
                self.busy.discard(name)
            current = self.core.read_node(name)
            if (current.metadata.labels or {}).get(LABEL_CONFIG) != config:
                self.handle(current)

    def run(self, stop: threading.Event | None = None) -> None:
        stop = stop or threading.Event()
        while not stop.is_set():
            try:
                nodes = self.core.list_node()
                for n in nodes.items:
                    self.handle(n)
                log.info("watching %d nodes", len(nodes.items))
                w = watch.Watch()
                for event in w.stream(self.core.list_node, resource_version=nodes.metadata.resource_version,
                                      timeout_seconds=300):
                    if stop.is_set():
                        w.stop()
                        break
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self.handle(event["object"])
            except Exception as exc:  # noqa: BLE001 - API server restarting: list again
                log.warning("watch loop: %s: %s", type(exc).__name__, exc)
                stop.wait(1.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.cluster.migmanager", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--delay", type=float, default=REPARTITION_S, help="seconds a repartition takes")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from testbed.cluster.kube import client_for
    MigManager(client_for(args.kubeconfig), args.delay).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
