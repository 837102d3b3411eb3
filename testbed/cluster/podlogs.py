"""A pod's container log, served through the API server as a kubelet's would be: the file in the CRI
format the kubelet writes (``<RFC3339Nano> <stream> F <line>``, kubernetes
pkg/kubelet/kuberuntime/logs/logs.go) and kwok's ``Logs`` object pointing at it (kwok.x-k8s.io/v1alpha1,
``spec.logs[].logsFile``; kwok pkg/kwok/server/logs.go reads that file). The device simulator and the
host-root runner both finish their pods through it."""
from __future__ import annotations

import datetime
import logging
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.waiting import GiveUp, wait_for

log = logging.getLogger("podlogs")


def cri_log(lines: list[str]) -> str:
    ts = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return "".join(f"{ts} stdout F {line}\n" for line in lines)


class PodLogs:
    def __init__(self, api: client.ApiClient):
        self.core = client.CoreV1Api(api)
        self.custom = client.CustomObjectsApi(api)

    def wait_served(self, pod: client.V1Pod) -> None:
        """kwok learns about a Logs object through its informer; finish the pod only once its
        log is served through the API server, so a reader never sees "no logs found"."""
        container = pod.spec.containers[0].name

        def served() -> bool:
            try:
                self.core.read_namespaced_pod_log(pod.metadata.name, pod.metadata.namespace,
                                                  container=container, limit_bytes=1)
            except ApiException as exc:
                if exc.status == 404:
                    raise GiveUp("pod gone") from None
                raise
            return True

        try:
            wait_for(f"kwok to serve the log of {pod.metadata.namespace}/{pod.metadata.name}", served, 15)
        except (TimeoutError, GiveUp) as exc:
            log.warning("%s", exc)

    def put(self, pod: client.V1Pod, logfile: Path | dict[str, Path]) -> None:
        """kwok's Logs object of the pod: one file for all its containers, or one per container."""
        logs = [{"containers": [c], "logsFile": str(f)} for c, f in logfile.items()] if isinstance(
            logfile, dict) else [{"logsFile": str(logfile)}]
        body = {
            "apiVersion": "kwok.x-k8s.io/v1alpha1", "kind": "Logs",
            "metadata": {
                "name": pod.metadata.name, "namespace": pod.metadata.namespace,
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod.metadata.name,
                                     "uid": pod.metadata.uid}],
            },
            "spec": {"logs": logs},
        }
        args = ("kwok.x-k8s.io", "v1alpha1", pod.metadata.namespace, "logs")
        try:
            self.custom.create_namespaced_custom_object(*args, body)
        except ApiException as exc:
            if exc.status != 409:
                raise
            self.custom.delete_namespaced_custom_object(*args, pod.metadata.name)
            self.custom.create_namespaced_custom_object(*args, body)
