"""The device side of the simulated GPU workers: what the NVIDIA device plugin and the CUDA
container would do on a real node, driven by the API server.

For each pod bound to a KWOK node it
* hands out concrete devices for the pod's ``nvidia.com/gpu`` / ``nvidia.com/mig-*`` limits
  (stable GPU-/MIG- UUIDs per node, never one device to two running pods) and records them in
  the annotation ``testbed.gpuconform.io/devices``;
* writes the container log (CRI format) that kwok serves through the API server: what
  ``nvidia-smi -L`` shows inside the container, then the vectoradd output (or, for a pod whose
  command ends in ``echo <text>``, that text);
* for a pod that runs to completion (restartPolicy Never/OnFailure) sets the annotation
  ``testbed.gpuconform.io/outcome`` (succeeded/failed), which the KWOK stages turn into the
  pod phase; a failing OnFailure pod is marked ``simulate=crashloop`` instead (it would restart).

The CUDA result is "fail" when the pod carries ``testbed.gpuconform.io/cuda: fail`` or the
scenario ConfigMap ``kube-system/gpuconform-testbed-scenario`` has ``cuda: fail``.

Run: ``python -m testbed.cluster.devicesim --kubeconfig K --log-dir D`` (the control plane does).
"""
from __future__ import annotations

import argparse
import logging
import sys
import threading
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.cluster import informer
from testbed.cluster.devices import (ANN_CUDA, ANN_DEVICES, ANN_DRIVER_LIBRARIES, ANN_OUTCOME, ANN_SIMULATE,
                                     KWOK_NODE_ANNOTATION, SCENARIO_CONFIGMAP, VECTORADD_BUSY, VECTORADD_OK, Device,
                                     command_text, device_node_lines, driver_report, echo_text, gpu_asked,
                                     gpu_requests, node_devices, smi_lines)
from testbed.cluster.nodeagent import hardware
from testbed.cluster.podlogs import PodLogs, cri_log
from testbed.cluster.hostexec import runs_in_host_root

log = logging.getLogger("devicesim")


class DeviceSim:
    def __init__(self, api: client.ApiClient, log_dir: Path):
        self.core = client.CoreV1Api(api)
        self.logs = PodLogs(api)
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.in_use: dict[str, str] = {}        # device uuid -> pod uid
        self.by_pod: dict[str, list[str]] = {}  # pod uid -> device uuids
        self.handled: set[str] = set()          # pod uids already run (events may be stale)
        self.stop = threading.Event()

    # -- event handling -------------------------------------------------------------------------
    def handle(self, event_type: str, pod: client.V1Pod) -> None:
        uid = pod.metadata.uid
        ann = pod.metadata.annotations or {}
        terminal = (pod.status and pod.status.phase in ("Succeeded", "Failed")) or pod.metadata.deletion_timestamp
        if event_type == "DELETED" or terminal:
            self.release(uid)
            if event_type == "DELETED":
                self.handled.discard(uid)
                for f in self.log_dir.glob(f"{pod.metadata.namespace}_{pod.metadata.name}_{uid}*.log"):
                    f.unlink(missing_ok=True)
            return
        if ANN_DEVICES in ann or ANN_OUTCOME in ann:
            if uid not in self.handled:
                self.handled.add(uid)
                self.remember(uid, ann.get(ANN_DEVICES, ""))
            return
        if uid in self.handled:
            return
        if not pod.spec.node_name:
            return
        wanted = gpu_requests(pod)
        runs_to_completion = pod.spec.restart_policy in ("Never", "OnFailure")
        node = self.core.read_node(pod.spec.node_name)
        if (node.metadata.annotations or {}).get(KWOK_NODE_ANNOTATION) != "fake":
            return
        if runs_in_host_root(pod, node):
            return  # a pod with the node's / mounted, on a node backed by a host root: hostexec.py runs it
        if not wanted and not runs_to_completion:
            self.serve_plain_log(pod)  # a service pod (DaemonSet, Deployment): its log only
            return
        self.allocate_and_run(pod, node, wanted, runs_to_completion)

    def serve_plain_log(self, pod: client.V1Pod) -> None:
        uid, ns, name = pod.metadata.uid, pod.metadata.namespace, pod.metadata.name
        self.handled.add(uid)
        text = echo_text(pod)
        logfile = self.log_dir / f"{ns}_{name}_{uid}.log"
        logfile.write_text(cri_log([text] if text else []))
        self.logs.put(pod, logfile)

    def remember(self, pod_uid: str, devices: str) -> None:
        uuids = [u for u in devices.split(",") if u]
        self.by_pod[pod_uid] = uuids
        for u in uuids:
            self.in_use[u] = pod_uid

    def release(self, pod_uid: str) -> None:
        for u in self.by_pod.pop(pod_uid, []):
            self.in_use.pop(u, None)

    def cuda_fails(self, pod: client.V1Pod) -> bool:
        if (pod.metadata.annotations or {}).get(ANN_CUDA) == "fail":
            return True
        return self._scenario("cuda") == "fail"

    def _scenario(self, key: str) -> str | None:
        """A value of the bed's scenario ConfigMap (None when the ConfigMap or key is absent)."""
        try:
            cm = self.core.read_namespaced_config_map(SCENARIO_CONFIGMAP[1], SCENARIO_CONFIGMAP[0])
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return (cm.data or {}).get(key)

    def runtime_leaks_gpus(self) -> bool:
        """Scenario ConfigMap ``isolation: leak``: the container runtime shows every GPU of the
        node to a pod that asked for none (NVIDIA_VISIBLE_DEVICES=all with nvidia as default runtime)."""
        return self._scenario("isolation") == "leak"

    def allocate_and_run(self, pod: client.V1Pod, node: client.V1Node, wanted: dict[str, int],
                         runs_to_completion: bool) -> None:
        uid, ns, name = pod.metadata.uid, pod.metadata.namespace, pod.metadata.name
        self.handled.add(uid)
        given: list[Device] = []
        short = []
        for resource, n in sorted(wanted.items()):
            free = [d for d in node_devices(node) if d.resource == resource and d.id not in self.in_use]
            if len(free) < n:
                short.append(f"{resource}: want {n}, free {len(free)}")
            given.extend(free[:n])
        ok = not short and not (wanted and self.cuda_fails(pod))
        text = echo_text(pod)
        logfiles, pool = {}, list(given)
        single = len(pod.spec.containers) == 1  # it gets all the pod's devices (init containers' asks too)
        for i, container in enumerate(pod.spec.containers):
            asked = wanted if single else gpu_asked(container)
            mine = pool if single else [d for d in pool if asked.get(d.resource)][:sum(asked.values())]
            pool = [d for d in pool if d not in mine]
            lines, works = self.container_view(node, container, mine, ok, bool(asked))
            ok = ok and works
            if i == 0 and text and (ok or not wanted):
                lines += [text]
            logfiles[container.name] = self.log_dir / f"{ns}_{name}_{uid}_{container.name}.log"
            logfiles[container.name].write_text(cri_log(lines))
        self.logs.put(pod, logfiles)
        self.remember(uid, ",".join(d.id for d in given))
        self.logs.wait_served(pod)
        annotations = {ANN_DEVICES: ",".join(d.id for d in given)}
        if runs_to_completion:
            if ok or pod.spec.restart_policy == "Never":
                annotations[ANN_OUTCOME] = "succeeded" if ok else "failed"
            else:
                annotations[ANN_SIMULATE] = "crashloop"
        try:
            self.core.patch_namespaced_pod(name, ns, {"metadata": {"annotations": annotations}})
        except ApiException as exc:
            if exc.status != 404:
                raise
            self.release(uid)
        log.info("pod %s/%s on %s: devices=%s outcome=%s %s", ns, name, node.metadata.name,
                 annotations[ANN_DEVICES], annotations.get(ANN_OUTCOME, annotations.get(ANN_SIMULATE)),
                 "; ".join(short))

    def container_view(self, node: client.V1Node, container, devices: list[Device], ok: bool,
                       asked: bool) -> tuple[list[str], bool]:
        """What one container prints and whether it succeeds: the GPUs it sees (its own; every GPU
        of the node for one that asked none under ``isolation: leak``) as device nodes where it
        lists them, the injected nvidia-smi's driver report where it queries it, else
        ``nvidia-smi -L`` and, for a CUDA container, the vectoradd output. Devices are per
        container: the kubelet's device manager asks the plugin to allocate for each container
        apart (k8s.io/kubernetes pkg/kubelet/cm/devicemanager/manager.go, allocateContainerResources)
        and the plugin answers with that container's devices only (k8s-device-plugin
        internal/plugin/server.go Allocate: one ContainerAllocateResponse per request)."""
        command = command_text(container)
        if not asked and self.runtime_leaks_gpus():
            devices = node_devices(node)
        lines = device_node_lines(devices) if "/dev/nvidia" in command else []
        if "--query-gpu=driver_version" in command:
            libraries = (node.metadata.annotations or {}).get(ANN_DRIVER_LIBRARIES)
            report, works = driver_report(hardware(node), devices, libraries) if devices else (
                ["sh: 1: nvidia-smi: not found"], False)
            return lines + report, works
        lines += smi_lines(devices)
        if asked and "/dev/nvidia" not in command:
            lines += VECTORADD_OK if ok else VECTORADD_BUSY
        return lines, True

    # -- list + watch loop ----------------------------------------------------------------------
    def remember_listed(self, pods: list) -> None:
        """First remember the devices running pods hold, then act: never hand out a used device."""
        for pod in pods:
            ann = pod.metadata.annotations or {}
            if ANN_DEVICES in ann and pod.status.phase not in ("Succeeded", "Failed"):
                self.remember(pod.metadata.uid, ann[ANN_DEVICES])

    def run(self) -> None:
        informer.run(self.core.list_pod_for_all_namespaces, self.handle, self.stop,
                     on_list=self.remember_listed, name="pods")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.cluster.devicesim", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--log-dir", required=True, type=Path)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from testbed.kube import client_for
    DeviceSim(client_for(args.kubeconfig), args.log_dir).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
