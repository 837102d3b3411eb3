"""Host roots behind KWOK workers: what a real kubelet does with a privileged pod that mounts the
node's ``/``, played on simulated GPU hosts (a process of the bed).

A KWOK node annotated ``testbed.gpuconform.io/host-root: <scenario>`` is backed by the root
filesystem of that ``testbed/hosts`` scenario (rendered once per scenario with
:func:`testbed.hosts.rootfs.render`; the same roots the suite reaches over SSH or ``chroot://``).
For every pod bound to such a node whose container mounts a ``hostPath`` of ``/`` (a node
agent, a debug pod, the suite's probe pods), this process runs the container's command as the
container runtime would, with that mount pointing at the node's root:

* the container's own filesystem is a stand-in for its image: a busybox-static userland (the
  bed pulls no images; what such pods run from their image is ``chroot``/``sh``);
* in a private mount namespace (``unshare --mount``), the node's root is bind-mounted at the
  volume's ``mountPath`` -- read-only when the mount says ``readOnly`` -- and the command runs
  chrooted into the image, so ``chroot /host /bin/sh -c ...`` lands in the node's root exactly as
  the suite's ``chroot://`` hosts do;
* stdout and stderr go to the pod's container log in the CRI format the kubelet writes
  (``<RFC3339Nano> <stream> F <line>``, kubernetes pkg/kubelet/kuberuntime/logs/logs.go), served
  through the API server by kwok from a ``Logs`` object (kwok's Logs CRD, kwok.x-k8s.io/v1alpha1,
  ``spec.logs[].logsFile``; kwok pkg/kwok/server/logs.go reads that file) -- ``podlogs.py``, which
  the device simulator serves its pods' logs through too;
* the exit code finishes the pod as the kubelet would for restartPolicy Never: 0 ->
  ``Succeeded``, non-zero -> ``Failed`` (annotation ``testbed.gpuconform.io/outcome``, turned into
  the phase by the bed's KWOK stages); ``activeDeadlineSeconds`` ends a command that runs longer.

Run: ``python -m testbed.cluster.hostexec --kubeconfig K --state-dir D --log-dir L`` (the control
plane starts it). ``back(core, {node: scenario})`` backs nodes.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import logging
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

from kubernetes import client
from kubernetes.client.rest import ApiException

from testbed.cluster import informer
from testbed.cluster.podlogs import PodLogs, cri_log

ANN = "testbed.gpuconform.io/"
ANN_HOST_ROOT = ANN + "host-root"
ANN_OUTCOME = ANN + "outcome"
BUSYBOX = "/bin/busybox"
#: what the stand-in image offers (busybox applets)
IMAGE_APPLETS = ("sh", "chroot", "cat", "ls", "echo", "env")
DEFAULT_DEADLINE_S = 600
#: mount the node's root at the volume's path inside the image, then chroot into the image
_CONTAINER = ('set -e; mount --rbind "$1" "$2$3"; '
              'if [ "$4" = ro ]; then mount -o remount,bind,ro "$2$3"; fi; '
              'img=$2; shift 4; exec chroot "$img" "$@"')

log = logging.getLogger("hostexec")


def back(core: client.CoreV1Api, nodes: dict[str, str | None]) -> None:
    """Back each node with the root of a testbed/hosts scenario (None: no longer backed)."""
    for node, scenario in nodes.items():
        core.patch_node(node, {"metadata": {"annotations": {ANN_HOST_ROOT: scenario}}})


def host_root_mount(pod: client.V1Pod):
    """(mountPath, readOnly) of the first container's mount of a hostPath ``/``, or None."""
    volumes = {v.name for v in (pod.spec.volumes or []) if v.host_path is not None and
               v.host_path.path.rstrip("/") == ""}
    containers = pod.spec.containers or []
    for m in (containers[0].volume_mounts or []) if containers and volumes else []:
        if m.name in volumes:
            return m.mount_path, bool(m.read_only)
    return None


def runs_in_host_root(pod: client.V1Pod, node: client.V1Node | str | None) -> bool:
    """Whether this process, not the device simulator, runs ``pod``: a run-to-completion pod
    mounting the node's / on a backed node (``node``: the Node, or the scenario backing it).
    Long-running pods that mount / (the GPU Operator's operands) stay the simulators'."""
    backed = node if isinstance(node, str) or node is None else (node.metadata.annotations or {}).get(ANN_HOST_ROOT)
    return bool(backed) and pod.spec.restart_policy == "Never" and host_root_mount(pod) is not None


def _started(pod: client.V1Pod) -> bool:
    """kwok reported the container started (its image pulled): only then does its command run."""
    return any(cs.state is not None and cs.state.running is not None
               for cs in (pod.status.container_statuses or [] if pod.status else []))


class HostExec:
    def __init__(self, api: client.ApiClient, state_dir: Path, log_dir: Path, workers: int = 2):
        self.core = client.CoreV1Api(api)
        self.logs = PodLogs(api)
        self.log_dir = Path(log_dir)
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.roots_dir = Path(state_dir) / "host-roots"
        self.image_dir = Path(state_dir) / "probe-image"
        self.backing: dict[str, str] = {}
        self.handled: set[str] = set()
        self.pool = cf.ThreadPoolExecutor(workers, thread_name_prefix="hostexec")
        self._roots: dict[str, cf.Future] = {}
        self._lock = threading.Lock()
        self._render_lock = threading.Lock()
        self.stop = threading.Event()

    # -- the node side --------------------------------------------------------------------------
    def on_node(self, event_type: str, node: client.V1Node) -> None:
        scenario = (node.metadata.annotations or {}).get(ANN_HOST_ROOT)
        if event_type == "DELETED" or not scenario:
            self.backing.pop(node.metadata.name, None)
        else:
            self.backing[node.metadata.name] = scenario

    def root(self, scenario: str) -> Path:
        """The scenario's root, rendered on first use (read-only for the pods: shared)."""
        with self._lock:
            future = self._roots.get(scenario)
            first = future is None
            if first:
                future = self._roots[scenario] = cf.Future()
        if first:
            try:
                from testbed.hosts import rootfs, scenarios
                with self._render_lock:  # the roots share one staging folder of binaries (rootfs.render)
                    future.set_result(rootfs.render(scenarios.build(scenario), self.roots_dir / scenario))
            except BaseException as exc:
                future.set_exception(exc)
        return future.result()

    def image(self) -> Path:
        """The stand-in for every image: busybox-static and its applets."""
        with self._lock:
            if not (self.image_dir / "bin" / "busybox").exists():
                (self.image_dir / "bin").mkdir(parents=True, exist_ok=True)
                shutil.copy2(BUSYBOX, self.image_dir / "bin" / "busybox")
                for applet in IMAGE_APPLETS:
                    (self.image_dir / "bin" / applet).symlink_to("busybox")
        return self.image_dir

    # -- the pod side ---------------------------------------------------------------------------
    def on_pod(self, event_type: str, pod: client.V1Pod) -> None:
        uid = pod.metadata.uid
        if event_type == "DELETED":
            self.handled.discard(uid)
            return
        node = pod.spec.node_name
        if (uid in self.handled or pod.metadata.deletion_timestamp or ANN_OUTCOME in (pod.metadata.annotations or {})
                or (pod.status and pod.status.phase in ("Succeeded", "Failed"))
                or not runs_in_host_root(pod, self.backing.get(node or "")) or not _started(pod)):
            return
        self.handled.add(uid)
        self.pool.submit(self.execute, pod, self.backing[node])

    def execute(self, pod: client.V1Pod, scenario: str) -> None:
        ns, name, uid = pod.metadata.namespace, pod.metadata.name, pod.metadata.uid
        try:
            rc, output = self.run_container(pod, self.root(scenario))
        except Exception as exc:  # noqa: BLE001 - as a runtime that cannot start the container
            rc, output = 128, f"hostexec: cannot run the container: {type(exc).__name__}: {exc}"
        logfile = self.log_dir / f"{ns}_{name}_{uid}.log"
        logfile.write_text(cri_log(output.splitlines()))
        try:
            self.logs.put(pod, logfile)
            self.logs.wait_served(pod)
            self.core.patch_namespaced_pod(name, ns, {"metadata": {"annotations": {
                ANN_OUTCOME: "succeeded" if rc == 0 else "failed"}}})
        except ApiException as exc:
            if exc.status != 404:  # deleted meanwhile: nothing to finish
                raise
        log.info("pod %s/%s on %s (%s): exit %s, %d bytes of log", ns, name, pod.spec.node_name, scenario, rc,
                 len(output))

    def run_container(self, pod: client.V1Pod, root: Path) -> tuple[int, str]:
        container = pod.spec.containers[0]
        mount_path, read_only = host_root_mount(pod)
        image = self.image()
        (image / mount_path.lstrip("/")).mkdir(parents=True, exist_ok=True)
        argv = list(container.command or []) + list(container.args or [])
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": pod.spec.node_name}
        env.update({e.name: e.value for e in (container.env or []) if e.value is not None})
        deadline = pod.spec.active_deadline_seconds or DEFAULT_DEADLINE_S
        proc = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", _CONTAINER, "container",
             str(root), str(image), mount_path, "ro" if read_only else "rw", *argv],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=deadline)
        except subprocess.TimeoutExpired:  # activeDeadlineSeconds: the kubelet kills the container
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            return 137, out.decode("utf-8", "replace")
        return proc.returncode, out.decode("utf-8", "replace")

    def run(self) -> None:
        threading.Thread(target=informer.run, args=(self.core.list_node, self.on_node, self.stop),
                         kwargs={"name": "nodes"}, daemon=True).start()
        informer.run(self.core.list_pod_for_all_namespaces, self.on_pod, self.stop, name="pods")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testbed.cluster.hostexec", description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--state-dir", required=True, type=Path)
    parser.add_argument("--log-dir", required=True, type=Path)
    parser.add_argument("--workers", type=int, default=int(os.environ.get("GPUCONFORM_HOSTEXEC_WORKERS", "2")))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    from testbed.kube import client_for
    HostExec(client_for(args.kubeconfig), args.state_dir, args.log_dir, args.workers).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
