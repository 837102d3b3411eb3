"""A real one-node Kubernetes on the lent GPU machine, judged by the suite, in one device call.

Runs ON the GPU machine (root, bare, no systemd, driver under /usr/local/nvidia): unpacks the
payload stage.py made, installs the binaries at the paths a site has them, lets NVIDIA's
toolkit configure itself, containerd and the CDI spec, starts etcd, the control plane,
containerd and the kubelet, Node Feature Discovery, then NVIDIA's device plugin and GPU Feature
Discovery from their Helm chart as pods; runs ``pytest -m "node or cluster"`` with the node's
profile, then makes each fault the real way and runs the cluster layer again; packs the reports,
logs and configs into ``$OUT``. Nothing touches the GPU's settings (no MIG, persistence, clocks,
resets): only files under /etc, /opt, /usr/bin, /usr/local, /var and /run are written.

    python3 -m testbed.gpunode run --payload .gpunode/payload.tar.xz --out "$OUT"
"""
from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ROOT = Path("/opt/gpunode")          # the unpacked payload
SUITE = ROOT / "suite"               # the suite's wheel, installed
STATE = Path("/var/lib/gpunode")     # PKI, etcd, kubeconfigs, logs, reports
NODE = "h200"
PROFILE = REPO / "profiles" / "h200-gpunode.yaml"
OPERATOR_PROFILE = REPO / "profiles" / "h200-gpu-operator.yaml"
DRIVER_ROOT = "/usr/local/nvidia"
LOOPBACK = "127.0.0.1"
SERVICE_IP = "10.96.0.1"             # the `kubernetes` Service: first address of the bed's service range
PORTS = {"etcd": 2379, "etcd_peer": 2380, "apiserver": 6443, "controller_manager": 10257,
         "scheduler": 10259, "nfd_master_metrics": 18081, "nfd_master_health": 18082,
         "nfd_worker_metrics": 18083, "nfd_worker_health": 18084}
CDI_SPEC = Path("/var/run/cdi/nvidia.yaml")
TOOLKIT_CONFIG = Path("/etc/nvidia-container-runtime/config.toml")
CONTAINERD_CONFIG = Path("/etc/containerd/config.toml")
RUNTIME_LOG = "/var/log/nvidia-container-runtime.log"
NFD_NAMESPACE = "node-feature-discovery"
#: installed path -> payload binary (the multi-call `kube` dispatches on the name it is called by)
#: The control plane's client identities: (common name, organization).
USERS = {"admin": ("gpuconform-admin", "system:masters"),
         "kube-controller-manager": ("system:kube-controller-manager", None),
         "kube-scheduler": ("system:kube-scheduler", None),
         "kubelet": (f"system:node:{NODE}", "system:nodes")}


def issue_pki(directory: Path) -> None:
    """The node's certificates, made when the payload is staged (testbed/cluster/pki.py, valid
    7 days from then): the GPU machine then needs no cryptography package. Every name and
    address is fixed (loopback control plane, node NODE)."""
    from testbed.cluster.pki import PKI
    pki = PKI(directory)
    hosts = (LOOPBACK, "localhost", NODE, "kubernetes", "kubernetes.default", "kubernetes.default.svc",
             "kubernetes.default.svc.cluster.local", SERVICE_IP)
    pki.issue("apiserver", "kube-apiserver", server=True, hosts=hosts)
    # the API server reaches the kubelet (logs, exec) as a member of system:masters: this bed
    # has no kubeadm:cluster-admins binding
    pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client", "system:masters", client=True)
    pki.issue("front-proxy-client", "front-proxy-client", client=True)
    pki.service_account_keys()
    for name, (cn, org) in USERS.items():
        pki.issue(name, cn, org, client=True)


class StagedPKI:
    """The certificates :func:`issue_pki` left in the payload, by name (testbed/cluster/pki.py's
    file names)."""
    def __init__(self, directory: Path):
        from testbed.cluster.pki import Pair   # file names only: no cryptography needed here
        self._pair, self.dir = Pair, directory
        self.ca = Pair(directory / "ca.crt", directory / "ca.key")
        self.service_account = Pair(directory / "sa.pub", directory / "sa.key")

    def pair(self, name: str):
        pair = self._pair(self.dir / f"{name}.crt", self.dir / f"{name}.key")
        if not pair.cert.is_file():
            raise RuntimeError(f"the payload has no certificate {name!r}: stage it again (make gpunode-stage)")
        return pair


INSTALL = {
    **{f"/usr/local/bin/{n}": "kube" for n in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubelet")},
    **{f"/usr/local/bin/{n}": n for n in ("etcd", "containerd", "ctr", "containerd-shim-runc-v2",
                                           "nfd-master", "nfd-worker")},
    "/usr/local/sbin/runc": "runc",
    **{f"/opt/cni/bin/{n}": n for n in ("bridge", "host-local", "loopback")},
    # the toolkit's own paths: the CDI spec names the hook by its absolute path
    **{f"/usr/bin/{n}": n for n in ("nvidia-ctk", "nvidia-cdi-hook", "nvidia-container-runtime")},
}


class NodeError(RuntimeError):
    pass


def sh(*argv: str, timeout: float = 120, check: bool = True, env: dict | None = None) -> str:
    """Run a command with a deadline; its output, or NodeError naming it."""
    try:
        out = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise NodeError(f"{' '.join(argv)}: no answer in {timeout:.0f}s") from None
    if check and out.returncode != 0:
        raise NodeError(f"{' '.join(argv)}: rc={out.returncode}\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out.stdout + out.stderr


def unpack(payload: Path, *more: Path) -> None:
    """The payload (and the GPU Operator's, for that stack) into ROOT (tar with xz when the
    machine has it, else Python's lzma)."""
    shutil.rmtree(ROOT, ignore_errors=True)
    ROOT.mkdir(parents=True)
    for archive in (payload, *more):
        if not archive.is_file():
            raise NodeError(f"{archive}: no such payload on this machine (make gpunode-stage, then carry it)")
        if shutil.which("xz") and shutil.which("tar"):
            sh("tar", "-xJf", str(archive), "-C", str(ROOT), timeout=300)
        else:
            with tarfile.open(archive, "r:xz") as tar:
                tar.extractall(ROOT, filter="tar")
    sys.path.insert(0, str(ROOT / "site"))


def install_suite() -> None:
    """The checkout's wheel into SUITE with the machine's own setuptools (nothing fetched)."""
    shutil.rmtree(SUITE, ignore_errors=True)
    sh(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
       "--no-compile", "--target", str(SUITE), str(REPO), timeout=300)


def install() -> None:
    for path, name in INSTALL.items():
        dst, src = Path(path), ROOT / "bin" / name
        if dst.is_symlink() and Path(os.readlink(dst)).parent == src.parent:
            dst.unlink()
        elif dst.exists():
            raise NodeError(f"{dst} already exists on this machine: not overwriting it")
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(src)


class Node:
    def __init__(self, out: Path, profile: Path):
        from testbed.cluster.procs import Supervisor
        self.out, self.profile = out, profile
        self.sup = Supervisor(STATE, attached=True)
        self.timings: dict[str, float] = {}
        self.t0 = time.monotonic()
        self.runs: list[dict] = []
        self.stopping = threading.Event()
        self.restarts: list[float] = []   # when containerd was restarted
        self.undo: list = []               # what to put back on the machine at the end

    def mark(self, what: str) -> None:
        self.timings[what] = round(time.monotonic() - self.t0, 1)
        print(f"[{self.timings[what]:6.1f}s] {what}", flush=True)

    # -- NVIDIA's toolkit configures itself, containerd and the CDI spec ----------------------
    def toolkit(self) -> None:
        TOOLKIT_CONFIG.parent.mkdir(parents=True, exist_ok=True)
        sh("nvidia-ctk", "config", "default", f"--output={TOOLKIT_CONFIG}")
        self.toolkit_set(**{"nvidia-container-runtime.mode": "cdi",
                            "accept-nvidia-visible-devices-envvar-when-unprivileged": "false",
                            "accept-nvidia-visible-devices-as-volume-mounts": "true",
                            # what the runtime decided for each container, for the run's record
                            "nvidia-container-runtime.debug": RUNTIME_LOG, "nvidia-container-runtime.log-level": "debug"})
        CDI_SPEC.parent.mkdir(parents=True, exist_ok=True)
        # --mode: without it the discovery mode is read from the config's nvidia-container-runtime.mode
        # (toolkit cmd/nvidia-ctk/cdi/generate/generate.go), and "cdi" is no discovery mode
        sh("nvidia-ctk", "cdi", "generate", "--mode=nvml", f"--driver-root={DRIVER_ROOT}", "--dev-root=/",
           "--nvidia-cdi-hook-path=/usr/bin/nvidia-cdi-hook", f"--output={CDI_SPEC}")
        self.mark("toolkit config and CDI spec")

    @staticmethod
    def toolkit_set(**settings: str) -> None:
        args = [a for k, v in settings.items() for a in ("--set", f"{k}={v}")]
        sh("nvidia-ctk", "config", f"--config-file={TOOLKIT_CONFIG}", "--in-place", *args)

    def containerd(self, *, nvidia_default: bool = True) -> None:
        """containerd as a site configures it; with ``nvidia_default`` the host's toolkit adds
        its runtime and makes it the default (part 2), else the GPU Operator's toolkit operand
        will (part 3). Kept running as systemd's ``Restart=always`` would: the operand restarts
        containerd with SIGHUP, which containerd v2.2.9 does not handle (cmd/containerd/command/
        main_unix.go handledSignals), so it exits and comes back with the new config."""
        from testbed.gpunode import config
        CONTAINERD_CONFIG.parent.mkdir(parents=True, exist_ok=True)
        CONTAINERD_CONFIG.write_text(config.containerd(restrict_oom_score_adj=True))
        if nvidia_default:
            sh("nvidia-ctk", "runtime", "configure", "--runtime=containerd", f"--config={CONTAINERD_CONFIG}",
               "--set-as-default")
        Path(config.CNI_CONF).mkdir(parents=True, exist_ok=True)
        (Path(config.CNI_CONF) / "10-gpunode.conflist").write_text(config.cni_conflist())
        self.start_containerd()
        threading.Thread(target=self._keep_containerd, daemon=True).start()
        self.mark("containerd up")

    def start_containerd(self) -> None:
        self.sup.start("containerd", ["containerd", f"--config={CONTAINERD_CONFIG}"], env=self.env())
        self.wait("containerd to answer", lambda: "Server:" in sh("ctr", "version", timeout=10, check=False), 30)

    def _keep_containerd(self) -> None:
        while not self.stopping.wait(0.5):
            rc = self.sup.exited("containerd")
            if rc is not None and not self.stopping.is_set():
                self.restarts.append(round(time.monotonic() - self.t0, 1))
                print(f"containerd exited (rc={rc}): restarting it as systemd would", flush=True)
                try:
                    self.start_containerd()
                except Exception as exc:  # noqa: BLE001 - the waits downstream report a dead runtime
                    print(f"containerd did not come back: {exc}", flush=True)

    @staticmethod
    def env(**extra: str) -> dict[str, str]:
        path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        return {"PATH": path, "HOME": "/root", **extra}

    # -- images --------------------------------------------------------------------------------
    def images(self, objects: list[dict], profile_path: Path, operator: bool = False) -> None:
        """The images, under the references the manifests and the profile name; with
        ``operator``, the GPU Operator's (its controller, validator, toolkit) besides."""
        from testbed.gpunode import images, oci
        work = STATE / "images"
        bins = ROOT / "bin"
        vectoradd = images.compile_vectoradd(HERE / "vectoradd.cu", work)
        self.mark("vectorAdd compiled with the machine's nvcc")
        from gpuconform import profile
        prof = profile.load(profile_path).profile   # the suite's own reading: the references it will run
        deps = images.driver_dependencies(DRIVER_ROOT)
        busybox = bins / "busybox"
        refs = {
            "pause": images.pause(bins / "pause"),
            "busybox": images.busybox(prof.k8s_node.image, busybox),
            "vectoradd": images.vectoradd(prof.cluster.workloads.image, vectoradd, busybox, deps),
        }

        if operator:
            from testbed.gpunode import operator_stack
            op, module = ROOT / "operator" / "bin", ROOT / "operator" / "module"
            ref = operator_stack.references(objects)
            refs |= {
                "device-plugin": images.device_plugin(ref["device-plugin"], bins, deps, busybox),
                "operator": images.operator(ref["operator"], op / "gpu-operator", module),
                "validator": images.validator(ref["validator"], op / "nvidia-validator", vectoradd,
                                              module / "validator", busybox, deps),
                "toolkit": images.toolkit(ref["toolkit"], bins, op, busybox),
                # no NVIDIA tools, but a C library as a distribution's base image has (nvidia-smi,
                # injected, is a glibc program): the AI Conformance checks find nvidia-smi in it
                "plain": images.plain(prof.ai_conformance.plain_image, busybox, deps),
            }
        else:
            refs["device-plugin"] = images.device_plugin(images.chart_image(objects), bins, deps, busybox)
        for name, image in refs.items():
            archive = work / f"{name}.tar"
            oci.write_archive(image, archive)
            sh("ctr", "-n", "k8s.io", "images", "import", str(archive), timeout=120)
        self.mark("images imported: " + ", ".join(i.ref for i in refs.values()) + f"; driver needs {deps}")

    # -- control plane and kubelet ------------------------------------------------------------
    def control_plane(self, *, in_cluster: bool = False) -> None:
        """etcd, the API server, controller-manager, scheduler, the kubelet. ``in_cluster``: pods
        reach the API server as in-cluster clients do (the GPU Operator and its validator): at the
        ``kubernetes`` Service's address, 10.96.0.1:443, which the kubelet puts in every
        container's environment. With no kube-proxy (and no iptables on the VM), the node itself
        holds that address on its loopback and the API server listens on port 443 of every
        address; a pod's packets to it go through cni0, its gateway, to the node."""
        from testbed.cluster.controlplane import apiserver_argv, controller_manager_argv, scheduler_argv
        from testbed.cluster.pki import kubeconfig
        from testbed.gpunode import config
        p = dict(PORTS)
        if in_cluster:
            p["apiserver"] = 443
            sh(str(ROOT / "bin" / "busybox"), "ip", "addr", "add", f"{SERVICE_IP}/32", "dev", "lo")
        pki = StagedPKI(ROOT / "pki")
        serving, kubelet_client, front_proxy = (pki.pair(n) for n in ("apiserver", "apiserver-kubelet-client",
                                                                        "front-proxy-client"))
        sa = pki.service_account
        server = f"https://{LOOPBACK}:{p['apiserver']}"
        self.pki, self.server = pki, server
        for name in USERS:
            (STATE / f"{name}.kubeconfig").write_text(kubeconfig(server, pki.ca.cert, pki.pair(name), name))
        self.admin = pki.pair("admin")
        self.kubeconfig = STATE / "admin.kubeconfig"

        etcd_url, peer = f"http://{LOOPBACK}:{p['etcd']}", f"http://{LOOPBACK}:{p['etcd_peer']}"
        self.sup.start("etcd", [
            "etcd", "--name=gpunode", f"--data-dir={STATE / 'etcd'}", f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}", f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}", f"--initial-cluster=gpunode={peer}",
            "--initial-cluster-state=new", "--log-level=warn"], env=self.env())
        self.wait_http("etcd", f"{etcd_url}/health", b'"health":"true"', 30)
        self.sup.start("kube-apiserver", apiserver_argv(
            "kube-apiserver", etcd_url, LOOPBACK, p["apiserver"], pki, serving, sa, kubelet_client, front_proxy,
            bind_address="0.0.0.0" if in_cluster else None), env=self.env())
        self.wait_http("kube-apiserver", f"{server}/readyz", b"ok", 60)
        self.sup.start("kube-controller-manager", controller_manager_argv(
            "kube-controller-manager", str(STATE / "kube-controller-manager.kubeconfig"), LOOPBACK,
            p["controller_manager"], pki, sa), env=self.env())
        self.sup.start("kube-scheduler", scheduler_argv(
            "kube-scheduler", str(STATE / "kube-scheduler.kubeconfig"), LOOPBACK, p["scheduler"]), env=self.env())
        self.mark("control plane up")

        kubelet_cfg = STATE / "kubelet.json"
        kubelet_cfg.write_text(config.kubelet(ca_file=str(pki.ca.cert)))
        self.sup.start("kubelet", [
            "kubelet", f"--config={kubelet_cfg}", f"--kubeconfig={STATE / 'kubelet.kubeconfig'}",
            f"--hostname-override={NODE}", "--root-dir=/var/lib/kubelet", "--cert-dir=/var/lib/kubelet/pki",
            "--v=1"], env=self.env())
        from kubernetes import client
        from testbed import kube
        self.api = kube.client_for(self.kubeconfig)
        self.core = client.CoreV1Api(self.api)

        def ready() -> bool:
            self.sup.give_up_if_exited("kubelet")
            node = self.core.read_node(NODE)
            return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])
        self.wait(f"node {NODE} Ready", ready, 90)
        self.wait("the default service account", lambda: self.core.read_namespaced_service_account("default", "default"), 60)
        self.mark(f"node {NODE} Ready")

    # -- Node Feature Discovery (host processes), NVIDIA's chart (pods) -----------------------
    def feature_discovery(self) -> None:
        from testbed import kube
        kube.apply_files(self.api, [ROOT / "nfd" / "crds.yaml"])
        kube.wait_crds_established(self.api, ["nodefeatures.nfd.k8s-sigs.io", "nodefeaturerules.nfd.k8s-sigs.io"], 30)
        self.namespace(NFD_NAMESPACE, privileged=False)
        master_cfg = yaml.safe_load((ROOT / "nfd" / "master.yaml").read_text()) or {}
        worker_cfg = yaml.safe_load((ROOT / "nfd" / "worker.yaml").read_text()) or {}
        # this bed's one change to the chart's worker config: re-read GFD's feature file every 5 s
        # instead of every 60 s, so that the labels are there before the suite runs
        worker_cfg.setdefault("core", {})["sleepInterval"] = "5s"
        (STATE / "nfd-master.conf").write_text(yaml.safe_dump(master_cfg))
        (STATE / "nfd-worker.conf").write_text(yaml.safe_dump(worker_cfg))
        env = self.env(NODE_NAME=NODE, KUBERNETES_NAMESPACE=NFD_NAMESPACE)
        self.sup.start("nfd-master", [
            "nfd-master", f"-kubeconfig={self.kubeconfig}", f"-config={STATE / 'nfd-master.conf'}",
            f"-metrics={PORTS['nfd_master_metrics']}", f"-grpc-health={PORTS['nfd_master_health']}"], env=env)
        self.sup.start("nfd-worker", [
            "nfd-worker", f"-kubeconfig={self.kubeconfig}", f"-config={STATE / 'nfd-worker.conf'}",
            "-no-owner-refs", f"-metrics={PORTS['nfd_worker_metrics']}",
            f"-grpc-health={PORTS['nfd_worker_health']}"], env=env)
        self.wait("NFD's PCI label for the NVIDIA GPU",
                  lambda: self.sup.give_up_if_exited("nfd-master", "nfd-worker") and
                  (self.core.read_node(NODE).metadata.labels or {}).get("feature.node.kubernetes.io/pci-10de.present") == "true", 60)
        self.mark("NFD labelled the node")

    def device_plugin(self, objects: list[dict]) -> None:
        from testbed.gpuoperator.operator import apply
        namespace = next(o["metadata"]["namespace"] for o in objects if o["kind"] == "DaemonSet")
        self.namespace(namespace, privileged=True)
        apply(self.api, objects, namespace=namespace)
        self.wait_gpu_ready(namespace, 120)
        self.mark("device plugin and GFD serving")

    def wait_gpu_ready(self, namespace: str, timeout: float) -> None:
        def ready() -> bool:
            self.sup.give_up_if_exited("nfd-master", "nfd-worker", "kubelet")
            self.give_up_if_crashing(namespace)
            node = self.core.read_node(NODE)
            labels = node.metadata.labels or {}
            return (node.status.allocatable or {}).get("nvidia.com/gpu", "0") != "0" \
                and "nvidia.com/gpu.product" in labels
        self.wait("allocatable nvidia.com/gpu and GFD's labels", ready, timeout)

    def give_up_if_crashing(self, namespace: str, restarts: int = 2) -> None:
        """A container restarted this often will not come good by waiting: its last words instead."""
        from testbed.waiting import GiveUp
        for pod in self.core.list_namespaced_pod(namespace).items:
            for st in (pod.status.init_container_statuses or []) + (pod.status.container_statuses or []):
                if st.restart_count >= restarts:
                    log = self.core.read_namespaced_pod_log(pod.metadata.name, namespace, container=st.name,
                                                            previous=True, tail_lines=30)
                    raise GiveUp(f"{pod.metadata.name}/{st.name} restarted {st.restart_count} times; its log:\n{log}")

    def namespace(self, name: str, *, privileged: bool) -> None:
        from kubernetes.client.rest import ApiException
        labels = {"pod-security.kubernetes.io/enforce": "privileged"} if privileged else {}
        try:
            self.core.create_namespace({"metadata": {"name": name, "labels": labels}})
        except ApiException as exc:
            if exc.status != 409:
                raise

    # -- NVIDIA's GPU Operator (part 3) -----------------------------------------------------------
    @staticmethod
    def shared_mounts() -> None:
        """``mount --make-rshared /``, as systemd leaves a host: the operands' Bidirectional
        mounts (/run/nvidia/validations) need a shared mount under them, else the kubelet refuses
        the container."""
        ms_rec, ms_shared = 0x4000, 1 << 20
        _mount(None, "/", ms_rec | ms_shared)

    def driver_program_on_path(self) -> None:
        """The driver's nvidia-smi where a host install has it (operator_stack's docstring says
        why): bound over the lent VM's /usr/bin/nvidia-smi script for this run, unbound at its
        end (``undo``)."""
        target, real = Path("/usr/bin/nvidia-smi"), Path(DRIVER_ROOT) / "bin" / "nvidia-smi"
        if not real.is_file():
            raise NodeError(f"{real}: no such program on this machine")
        created = not target.exists()
        if created:
            target.touch()   # a bind mount needs a file to cover
        _mount(str(real), str(target), 0x1000)   # MS_BIND
        self.undo.append(lambda: (_umount(str(target)), created and target.unlink(missing_ok=True)))
        self.mark(f"{real} bound over {target}")

    def gpu_operator(self, objects: list[dict], timeout: float = 300) -> None:
        """The chart's objects as ``helm install`` creates them (CRDs first), then NVIDIA's
        controller, running in its pod, deploys the operands. Done when the controller says so AND
        the node shows it: ClusterPolicy ``state: ready`` alone proves nothing (the controller
        writes it with no GPU node, controllers/clusterpolicy_controller.go), so its Ready
        condition must be True too (written in a second update), every operand
        DaemonSet must have its pod available, the GPU be allocatable and GFD's labels be there."""
        from kubernetes import client, dynamic
        from testbed.gpunode import operator_stack
        from testbed.gpuoperator.operator import apply
        self.namespace(operator_stack.NAMESPACE, privileged=True)
        apply(self.api, objects, namespace=operator_stack.NAMESPACE)
        self.mark("GPU Operator chart applied")
        apps = client.AppsV1Api(self.api)
        policies = dynamic.DynamicClient(self.api).resources.get(api_version="nvidia.com/v1", kind="ClusterPolicy")
        self.operator_seen: dict = {}

        def ready() -> bool:
            self.sup.give_up_if_exited("nfd-master", "nfd-worker", "kubelet")
            self.give_up_if_crashing(operator_stack.NAMESPACE, restarts=4)
            policy = policies.get(name="cluster-policy").to_dict()
            status = policy.get("status") or {}
            sets = {d.metadata.name: (d.status.number_available or 0, d.status.desired_number_scheduled or 0)
                    for d in apps.list_namespaced_daemon_set(operator_stack.NAMESPACE).items}
            node = self.core.read_node(NODE)
            self.operator_seen = {"state": status.get("state"), "conditions": status.get("conditions"),
                                  "daemonsets": sets, "allocatable_gpu": (node.status.allocatable or {}).get("nvidia.com/gpu")}
            # the controller writes state and conditions in two updates: both must say ready
            reconciled = any(c.get("type") == "Ready" and c.get("status") == "True"
                             for c in status.get("conditions") or [])
            return (status.get("state") == "ready" and reconciled
                    and all(sets.get(name, (0, 0))[0] >= 1 for name in operator_stack.OPERANDS)
                    and self.operator_seen["allocatable_gpu"] not in (None, "0")
                    and "nvidia.com/gpu.product" in (node.metadata.labels or {}))
        try:
            self.wait("ClusterPolicy ready with every operand available", ready, timeout)
        finally:
            print(f"operator state seen last: {json.dumps(self.operator_seen, default=str)}", flush=True)
        self.mark("GPU Operator ready: " + json.dumps(self.operator_seen["daemonsets"]))

    def operator_faults(self) -> None:
        """Part 3's fault, made as a site makes it: ``helm upgrade --set devicePlugin.enabled=false``
        reaches the ClusterPolicy, NVIDIA's controller deletes the plugin's DaemonSet and the
        kubelet withdraws the GPU (expected: REJECTED by the spec check, the profile requiring the
        plugin, and by allocatable; the operand check judges only operands the ClusterPolicy enables)."""
        from kubernetes import dynamic
        policies = dynamic.DynamicClient(self.api).resources.get(api_version="nvidia.com/v1", kind="ClusterPolicy")
        policies.patch(name="cluster-policy", body={"spec": {"devicePlugin": {"enabled": False}}},
                       content_type="application/merge-patch+json")
        self.wait("allocatable nvidia.com/gpu 0 after the operator removed the device plugin",
                  lambda: (self.core.read_node(NODE).status.allocatable or {}).get("nvidia.com/gpu", "0") == "0", 120)
        self.mark("ClusterPolicy devicePlugin.enabled=false: plugin gone, allocatable 0")
        self.suite("fault-operator-device-plugin-disabled", "cluster",
                   ("cluster.operator.spec", "cluster.mig.allocatable"), blocked=("cluster.workload.vectoradd_gpu",))

    # -- the suite -----------------------------------------------------------------------------
    def suite(self, name: str, marker: str, failing: tuple[str, ...] = (), blocked: tuple[str, ...] = ()) -> dict:
        """One suite run; as expected when it is ACCEPTED with no ``failing`` checks named, or
        REJECTED with each of them failed and each of ``blocked`` blocked by a failed check."""
        reports = STATE / "reports" / name
        reports.mkdir(parents=True, exist_ok=True)
        # the suite as a site runs it: its wheel installed (manifests ship as gpuconform.manifests),
        # pytest started outside the checkout, importing the checks in importlib mode
        env = self.env(PYTHONPATH=f"{SUITE}:{ROOT / 'site'}", PYTHONDONTWRITEBYTECODE="1")
        argv = [sys.executable, "-m", "pytest", f"--rootdir={REPO}", f"--config-file={REPO / 'pyproject.toml'}",
                "--import-mode=importlib", "-m", marker, f"--profile={self.profile}",
                f"--kubeconfig={self.kubeconfig}", f"--report-dir={reports}", f"--report-name={name}", "-p", "no:cacheprovider"]
        if "node" in marker:
            argv.append(f"--hosts=k8s-node://{NODE}")
        argv.append(str(REPO / "tests"))   # testpaths apply only when pytest starts in the rootdir
        t = time.monotonic()
        try:
            proc = subprocess.run(argv, cwd=reports, env=env, capture_output=True, text=True, timeout=300)
            rc, output = proc.returncode, proc.stdout + proc.stderr
        except subprocess.TimeoutExpired as exc:
            rc, output = 124, f"{exc.stdout or ''}{exc.stderr or ''}\n(pytest killed after 300 s)"
        (reports / "pytest.log").write_text(output)
        found = verdicts(reports)
        by_verdict = {v: {r["check"] for r in found.get("not_pass", []) if r["verdict"] == v} for v in ("fail", "blocked")}
        as_expected = (found.get("verdict") == "REJECTED" and set(failing) <= by_verdict["fail"]
                       and set(blocked) <= by_verdict["blocked"]) if failing else found.get("verdict") == "ACCEPTED"
        expected = {"fail": list(failing), "blocked": list(blocked)} if failing else "ACCEPTED"
        run = {"name": name, "marker": marker, "expected": expected, "rc": rc,
               "as_expected": as_expected, "seconds": round(time.monotonic() - t, 1), "verdicts": found}
        self.runs.append(run)
        self.mark(f"suite run {name}: rc={rc} {found.get('verdict')} (as expected: {as_expected})")
        return run

    # -- faults made the real way ---------------------------------------------------------------
    def faults(self, objects: list[dict]) -> None:
        # 1. the toolkit's default: an unprivileged container's NVIDIA_VISIBLE_DEVICES is obeyed,
        #    so an image carrying NVIDIA_VISIBLE_DEVICES=all gets every GPU without asking
        self.toolkit_set(**{"accept-nvidia-visible-devices-envvar-when-unprivileged": "true"})
        self.suite("fault-envvar-unprivileged", "cluster", ("cluster.workload.isolation",))
        self.toolkit_set(**{"accept-nvidia-visible-devices-envvar-when-unprivileged": "false"})
        # 2. the CDI spec gone (e.g. not regenerated after a driver change)
        moved = CDI_SPEC.with_suffix(".removed")
        CDI_SPEC.rename(moved)
        try:
            self.suite("fault-cdi-spec-removed", "cluster", ("cluster.workload.vectoradd_gpu",))
        finally:
            moved.rename(CDI_SPEC)
        # 3. the device plugin's DaemonSet deleted with its pod: the kubelet withdraws the GPUs
        from kubernetes import client
        apps = client.AppsV1Api(self.api)
        for o in objects:
            if o["kind"] == "DaemonSet" and "device-plugin" in o["metadata"]["name"] and "gpu-feature" not in o["metadata"]["name"]:
                apps.delete_namespaced_daemon_set(o["metadata"]["name"], o["metadata"]["namespace"],
                                                  propagation_policy="Foreground")
        self.wait("allocatable nvidia.com/gpu 0",
                  lambda: (self.core.read_node(NODE).status.allocatable or {}).get("nvidia.com/gpu", "0") == "0", 90)
        self.mark("device plugin gone, allocatable 0")
        self.suite("fault-device-plugin-deleted", "cluster", ("cluster.mig.allocatable",),
                   blocked=("cluster.workload.vectoradd_gpu",))

    # -- helpers -------------------------------------------------------------------------------
    @staticmethod
    def wait(what: str, probe, timeout: float):
        from testbed.waiting import wait_for
        return wait_for(what, probe, timeout)

    def wait_http(self, name: str, url: str, expect: bytes, timeout: float) -> None:
        from testbed.cluster.controlplane import wait_http
        ctx = None
        if url.startswith("https"):
            ctx = ssl.create_default_context(cafile=str(self.pki.ca.cert))
            ctx.load_cert_chain(str(self.admin.cert), str(self.admin.key))
        wait_http(self.sup, name, url, timeout, expect=expect, ctx=ctx)

    def collect(self) -> None:
        """Reports, logs and the configs the node ran with, into $OUT (one archive + a summary)."""
        self.out.mkdir(parents=True, exist_ok=True)
        summary = {"node": NODE, "timings_s": self.timings, "runs": self.runs, "containerd_restarts_at_s": self.restarts,
                   "operator_seen": getattr(self, "operator_seen", None),
                   "versions": json.loads((ROOT / "versions.json").read_text()) if (ROOT / "versions.json").exists() else {},
                   "machine": machine_facts()}
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        with tarfile.open(self.out / "gpunode-run.tar.gz", "w:gz") as tar:
            for path in (STATE / "reports", STATE / "logs", STATE / "kubelet.json", STATE / "nfd-worker.conf",
                         STATE / "nfd-master.conf", CONTAINERD_CONFIG, Path("/etc/containerd/conf.d"),
                         TOOLKIT_CONFIG, Path("/var/run/cdi"), Path("/etc/cdi"), ROOT / "chart", ROOT / "operator" / "objects.yaml",
                         Path("/var/log/pods"), Path(RUNTIME_LOG), Path("/run/nvidia/validations"),
                         Path("/usr/local/nvidia-toolkit/toolkit/.config")):
                if path.exists():
                    tar.add(path, arcname=str(path).lstrip("/"))
            for name, read in (("node.yaml", lambda: self.core.read_node(NODE)),
                               ("pods.yaml", lambda: self.core.list_pod_for_all_namespaces()),
                               ("events.yaml", lambda: self.core.list_event_for_all_namespaces())):
                try:
                    blob = yaml.safe_dump(self.api.sanitize_for_serialization(read())).encode()
                except Exception:  # noqa: BLE001 - the API may be gone when bring-up failed
                    continue
                info = tarfile.TarInfo(name)
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))


def _libc():
    import ctypes
    return ctypes, ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: str, flags: int) -> None:
    """mount(2) through libc (the VM has no mount binary to rely on); NodeError naming it."""
    ctypes, libc = _libc()
    if libc.mount(source and source.encode(), target.encode(), None, flags, None) != 0:
        raise NodeError(f"mount {source or ''} {target} (flags {flags:#x}): {os.strerror(ctypes.get_errno())}")


def _umount(target: str) -> None:
    _libc()[1].umount2(target.encode(), 2)   # MNT_DETACH


def verdicts(reports: Path) -> dict:
    """The run's verdict, counts and every result that is not a pass, from its JSON report
    (gpuconform/report/run.py: verdict.word, counts, results[].check_id/param/verdict/message)."""
    files = sorted(reports.glob("*.json"))
    if not files:
        return {}
    doc = json.loads(files[-1].read_text())
    return {"verdict": doc["verdict"]["word"], "counts": doc["counts"],
            "not_pass": [{"check": r["check_id"], "param": r["param"], "verdict": r["verdict"],
                          "message": (r["message"] or "")[:400]} for r in doc["results"] if r["verdict"] != "pass"]}


def machine_facts() -> dict:
    facts = {"hostname": socket.gethostname()}
    for key, cmd in (("kernel", ["uname", "-r"]), ("gpu", ["nvidia-smi", "--query-gpu=name,driver_version,mig.mode.current",
                                                          "--format=csv,noheader"])):
        try:
            facts[key] = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            facts[key] = None
    return facts


def _deadline(signum, frame) -> None:
    raise NodeError(f"signal {signum}: the device command's deadline came first")


def run(payload: Path, out: Path, *, faults: bool = True, operator_payload: Path | None = None) -> int:
    """Part 2 (and 4): the device plugin stack from its chart, then the faults. With
    ``operator_payload``, part 3 instead: the GPU Operator deploys the stack, then its fault."""
    # `timeout -s TERM` around the device command: the reports and logs are still packed into $OUT
    signal.signal(signal.SIGTERM, _deadline)
    t0 = time.monotonic()
    operator = operator_payload is not None
    unpack(payload, *([operator_payload] if operator else []))
    install()
    install_suite()
    chart = ROOT / ("operator" if operator else "chart") / "objects.yaml"
    objects = [d for d in yaml.safe_load_all(chart.read_text()) if d]
    shutil.rmtree(STATE, ignore_errors=True)
    STATE.mkdir(parents=True)
    node = Node(out, OPERATOR_PROFILE if operator else PROFILE)
    node.mark(f"payload unpacked and installed ({time.monotonic() - t0:.1f}s)")
    try:
        if operator:
            node.shared_mounts()
            node.driver_program_on_path()
            node.containerd(nvidia_default=False)
        else:
            node.toolkit()
            node.containerd()
        node.images(objects, node.profile, operator=operator)
        node.control_plane(in_cluster=operator)
        node.feature_discovery()
        if operator:
            node.gpu_operator(objects)
        else:
            node.device_plugin(objects)
        node.suite("healthy", "node or cluster")
        if operator:
            node.suite("aiconformance", "aiconformance")
        if faults:
            node.operator_faults() if operator else node.faults(objects)
        return 0 if all(r["as_expected"] for r in node.runs) else 1
    except Exception as exc:  # noqa: BLE001 - whatever broke is reported with the logs
        node.mark(f"bring-up failed: {type(exc).__name__}: {exc}")
        return 1
    finally:
        node.stopping.set()
        node.collect()
        node.sup.stop_all(timeout=10)
        for undo in reversed(node.undo):
            undo()
