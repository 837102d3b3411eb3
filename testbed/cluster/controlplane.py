"""A real Kubernetes control plane on loopback: etcd -> kube-apiserver -> controller-manager,
scheduler, kwok (the simulated kubelets), the device-plugin simulator and the host-root executor.

Everything lives under one state folder (default ``.state/cluster`` in the repo):
``pki/`` certificates, ``*.kubeconfig``, ``etcd/`` data, ``logs/<process>.log``,
``pids/<process>.pid``, ``pod-logs/`` container logs kwok serves, ``cluster.json``
(ports, versions, kubeconfig path).
"""
from __future__ import annotations

import json
import os
import shutil
import ssl
import sys
import time
import urllib.request
from pathlib import Path

from testbed.cluster import binaries
from testbed.cluster.pki import PKI, kubeconfig
from testbed.cluster.procs import Supervisor
from testbed.gpuoperator import binaries as gpuop_binaries
from testbed.ports import LOOPBACK, free_port
from testbed.waiting import GiveUp, wait_for

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
DEFAULT_STATE = REPO / ".state" / "cluster"
MANIFESTS = HERE / "manifests"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"


def apiserver_argv(binary: str, etcd_url: str, address: str, port: int, pki: PKI, serving, sa,
                   kubelet_client, front_proxy, *, bind_address: str | None = None) -> list[str]:
    """kube-apiserver's flags: RBAC + Node authorization, service-account tokens, the
    aggregation layer's front proxy, kubelets reached by InternalIP. Admission webhooks (and
    APIServices) are reached through their Service's EndpointSlices, not its ClusterIP
    (``--enable-aggregator-routing``: cmd/kube-apiserver/app/server.go buildServiceResolver):
    nothing routes ClusterIPs here (no kube-proxy), while a bed controller serving a webhook
    as a local process is an endpoint on the host's address (testbed/trainer)."""
    return [
        binary, f"--etcd-servers={etcd_url}",
        f"--bind-address={bind_address or address}", f"--advertise-address={address}", f"--secure-port={port}",
        f"--tls-cert-file={serving.cert}", f"--tls-private-key-file={serving.key}",
        f"--client-ca-file={pki.ca.cert}",
        f"--service-account-key-file={sa.cert}", f"--service-account-signing-key-file={sa.key}",
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        "--service-cluster-ip-range=10.96.0.0/16", "--authorization-mode=Node,RBAC",
        "--allow-privileged=true", "--profiling=false", "--endpoint-reconciler-type=none",
        f"--kubelet-client-certificate={kubelet_client.cert}", f"--kubelet-client-key={kubelet_client.key}",
        "--kubelet-preferred-address-types=InternalIP", "--kubelet-timeout=10s",
        "--enable-admission-plugins=NodeRestriction", "--enable-aggregator-routing=true", "--v=1",
        f"--requestheader-client-ca-file={pki.ca.cert}", "--requestheader-allowed-names=front-proxy-client",
        "--requestheader-username-headers=X-Remote-User", "--requestheader-group-headers=X-Remote-Group",
        "--requestheader-extra-headers-prefix=X-Remote-Extra-",
        f"--proxy-client-cert-file={front_proxy.cert}", f"--proxy-client-key-file={front_proxy.key}",
    ]


def controller_manager_argv(binary: str, kubeconfig_file: str, address: str, port: int, pki: PKI, sa) -> list[str]:
    return [
        binary, f"--kubeconfig={kubeconfig_file}",
        f"--authentication-kubeconfig={kubeconfig_file}", f"--authorization-kubeconfig={kubeconfig_file}",
        f"--bind-address={address}", f"--secure-port={port}",
        f"--service-account-private-key-file={sa.key}", f"--root-ca-file={pki.ca.cert}",
        f"--cluster-signing-cert-file={pki.ca.cert}", f"--cluster-signing-key-file={pki.ca.key}",
        "--use-service-account-credentials=true", "--leader-elect=false",
        "--service-cluster-ip-range=10.96.0.0/16", "--profiling=false",
        "--concurrent-gc-syncs=5", "--v=1",
    ]


def scheduler_argv(binary: str, kubeconfig_file: str, address: str, port: int) -> list[str]:
    return [
        binary, f"--kubeconfig={kubeconfig_file}",
        f"--authentication-kubeconfig={kubeconfig_file}", f"--authorization-kubeconfig={kubeconfig_file}",
        f"--bind-address={address}", f"--secure-port={port}",
        "--leader-elect=false", "--profiling=false", "--v=1",
    ]


class ControlPlaneError(RuntimeError):
    pass


def wait_http(supervisor: Supervisor, name: str, url: str, timeout: float, *, expect: bytes = b"ok",
              ctx: ssl.SSLContext | None = None) -> None:
    """Until process ``name`` answers ``url`` with a body holding ``expect``; ControlPlaneError
    with its log's tail when it exits or the deadline passes."""
    def probe() -> bool:
        supervisor.give_up_if_exited(name)
        with urllib.request.urlopen(url, timeout=5, context=ctx) as resp:  # noqa: S310 - loopback
            body = resp.read()
        if expect not in body:
            raise ControlPlaneError(f"{url} answered {body[:200]!r}")
        return True

    try:
        wait_for(f"{name} to answer {url}", probe, timeout)
    except GiveUp as exc:
        raise ControlPlaneError(str(exc)) from None
    except TimeoutError as exc:
        raise ControlPlaneError(f"{exc}\n--- {name} log tail ---\n{supervisor.log_tail(name)}") from None


class ControlPlane:
    """Start/stop the processes. ``attached=True`` ties them to this Python process."""

    def __init__(self, state_dir: Path | str = DEFAULT_STATE, *, attached: bool = True,
                 allow_build: bool = True):
        self.state_dir = Path(state_dir).resolve()
        self.attached = attached
        self.allow_build = allow_build
        self.supervisor = Supervisor(self.state_dir, attached=attached)
        self.ports: dict[str, int] = {}
        self.bin_dir: Path | None = None
        self.timings: dict[str, float] = {}

    # -- paths --------------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.state_dir / "admin.kubeconfig"

    @property
    def server(self) -> str:
        if "apiserver" not in self.ports and self.info_file.is_file():  # a control plane another
            self.ports.update(json.loads(self.info_file.read_text())["ports"])  # object started here
        return f"https://{LOOPBACK}:{self.ports['apiserver']}"

    @property
    def info_file(self) -> Path:
        return self.state_dir / "cluster.json"

    @property
    def pod_log_dir(self) -> Path:
        return self.state_dir / "pod-logs"

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self, timeout: float = 180) -> "ControlPlane":
        t0 = time.monotonic()
        self.bin_dir = binaries.ensure_built(self.allow_build)
        self.stop()  # whatever an interrupted run left in this state folder
        self._fresh_state()
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise
        self.timings["start"] = time.monotonic() - t0
        self._write_info()
        return self

    def stop(self) -> list[str]:
        """Stop every process of this state folder; returns those that needed SIGKILL."""
        return self.supervisor.stop_all()

    def running(self) -> list[str]:
        return [r.name for r in self.supervisor.alive()]

    # -- internals ----------------------------------------------------------------------------
    def _fresh_state(self) -> None:
        for sub in ("pki", "etcd", "pod-logs", "logs"):
            shutil.rmtree(self.state_dir / sub, ignore_errors=True)
        for f in self.state_dir.glob("*.kubeconfig"):
            f.unlink()
        self.info_file.unlink(missing_ok=True)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.pod_log_dir.mkdir(parents=True, exist_ok=True)

    def _bin(self, name: str) -> str:
        assert self.bin_dir is not None
        return str(self.bin_dir / name)

    def _start(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        left = lambda: max(1.0, deadline - time.monotonic())  # noqa: E731

        pki = PKI(self.state_dir / "pki")
        hosts = (LOOPBACK, "localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local", "10.96.0.1")
        serving = pki.issue("apiserver", "kube-apiserver", server=True, hosts=hosts)
        admin = pki.issue("admin", "gpuconform-admin", "system:masters", client=True)
        kcm = pki.issue("kube-controller-manager", "system:kube-controller-manager", client=True)
        sched = pki.issue("kube-scheduler", "system:kube-scheduler", client=True)
        kubelet_client = pki.issue("apiserver-kubelet-client", "kube-apiserver-kubelet-client",
                                   "kubeadm:cluster-admins", client=True)
        front_proxy = pki.issue("front-proxy-client", "front-proxy-client", client=True)
        kwok_serving = pki.issue("kwok", "kwok", server=True, hosts=(LOOPBACK, "localhost"))
        sa = pki.service_account_keys()
        self._pki, self._admin = pki, admin

        for name in ("etcd_client", "etcd_peer", "apiserver", "controller_manager", "scheduler", "kwok"):
            self.ports[name] = free_port()
        p = self.ports

        for name, pair in (("admin", admin), ("kube-controller-manager", kcm), ("kube-scheduler", sched)):
            (self.state_dir / f"{name}.kubeconfig").write_text(
                kubeconfig(self.server, pki.ca.cert, pair, name))
        kcm_kc = str(self.state_dir / "kube-controller-manager.kubeconfig")
        sched_kc = str(self.state_dir / "kube-scheduler.kubeconfig")

        # etcd --------------------------------------------------------------------------------
        etcd_url = f"http://{LOOPBACK}:{p['etcd_client']}"
        peer_url = f"http://{LOOPBACK}:{p['etcd_peer']}"
        self.supervisor.start("etcd", [
            self._bin("etcd"), "--name=testbed", f"--data-dir={self.state_dir / 'etcd'}",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=testbed={peer_url}", "--initial-cluster-state=new",
            "--unsafe-no-fsync", "--log-level=warn", "--quota-backend-bytes=4294967296",
        ])
        self._wait_http("etcd", f"{etcd_url}/health", left(), expect=b'"health":"true"')
        self.timings["etcd"] = timeout - left()

        # kube-apiserver ----------------------------------------------------------------------
        self.supervisor.start("kube-apiserver", apiserver_argv(
            self._bin("kube-apiserver"), etcd_url, LOOPBACK, p["apiserver"], pki, serving, sa,
            kubelet_client, front_proxy))
        self._wait_http("kube-apiserver", f"{self.server}/readyz", left(), expect=b"ok", tls_client=True)
        self.timings["apiserver"] = timeout - left()

        # the CRD kwok needs before starting (its Logs) ----------------------------------------
        from testbed import kube  # the kubernetes client is only needed from here on
        api = kube.client_for(self.kubeconfig)
        kube.apply_files(api, [MANIFESTS / "kwok-logs-crd.yaml"])
        kube.wait_crds_established(api, ["logs.kwok.x-k8s.io"], left())

        # controller-manager, scheduler, kwok, device simulator ----------------------------------
        self.supervisor.start("kube-controller-manager", controller_manager_argv(
            self._bin("kube-controller-manager"), kcm_kc, LOOPBACK, p["controller_manager"], pki, sa))
        self.supervisor.start("kube-scheduler", scheduler_argv(
            self._bin("kube-scheduler"), sched_kc, LOOPBACK, p["scheduler"]))
        self.supervisor.start("kwok", [
            self._bin("kwok"), f"--kubeconfig={self.kubeconfig}",
            f"--config={MANIFESTS / 'kwok-stages.yaml'}",
            "--manage-all-nodes=false",
            f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
            f"--node-ip={LOOPBACK}", f"--node-port={p['kwok']}",
            f"--server-address={LOOPBACK}:{p['kwok']}",
            f"--tls-cert-file={kwok_serving.cert}", f"--tls-private-key-file={kwok_serving.key}",
            "--cidr=10.244.0.1/16", "--node-lease-duration-seconds=40", "--enable-crds=Logs",
        ])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
        self.supervisor.start("devicesim", [
            sys.executable, "-m", "testbed.cluster.devicesim", f"--kubeconfig={self.kubeconfig}",
            f"--log-dir={self.pod_log_dir}",
        ], env=env)
        self.supervisor.start("hostexec", [  # pods with the node's / mounted, in its host root (hostexec.py)
            sys.executable, "-m", "testbed.cluster.hostexec", f"--kubeconfig={self.kubeconfig}",
            f"--state-dir={self.state_dir}", f"--log-dir={self.pod_log_dir}",
        ], env=env)
        self.supervisor.start("nodeagent", [  # what NVIDIA's operands do on a node (nodeagent.py)
            sys.executable, "-m", "testbed.cluster.nodeagent", f"--kubeconfig={self.kubeconfig}",
            f"--validator-manifests={gpuop_binaries.module_dir(allow_build=self.allow_build) / 'validator'}",
        ], env=env)

        self._wait_http("kube-controller-manager", f"https://{LOOPBACK}:{p['controller_manager']}/healthz", left())
        self._wait_http("kube-scheduler", f"https://{LOOPBACK}:{p['scheduler']}/healthz", left())
        self._wait_http("kwok", f"https://{LOOPBACK}:{p['kwok']}/healthz", left())
        wait_for("the controller-manager to create the default service account",
                 lambda: self.supervisor.give_up_if_exited("kube-controller-manager")
                 and kube.service_account_exists(api, "default", "default"), left())
        self.supervisor.give_up_if_exited("devicesim", "nodeagent", "hostexec")
        self.timings["controllers"] = timeout - left()

    def start_gpu_operator(self, rendered: list[dict], timeout: float = 60) -> None:
        """NVIDIA's GPU Operator controller with the container args and environment of the
        chart's Deployment (``rendered``) and a token of its ServiceAccount, in its private mount
        namespace."""
        from testbed.gpuoperator import operator
        container = operator.controller_container(rendered)
        for name in ("operator_metrics", "operator_probe"):
            self.ports[name] = free_port()
        argv = operator.controller_argv(container, metrics_port=self.ports["operator_metrics"],
                                        probe_port=self.ports["operator_probe"])
        from testbed.kube import client_for
        sa = operator.service_account(client_for(self.kubeconfig), self.state_dir / "gpu-operator-serviceaccount",
                                      self.state_dir / "pki" / "ca.crt")
        self.supervisor.start("gpu-operator", operator.launcher(self.state_dir, sa, argv),
                              env=operator.controller_process_env(rendered, self.server))
        self._wait_http("gpu-operator", f"http://{LOOPBACK}:{self.ports['operator_probe']}/readyz", timeout)
        self._write_info()

    def _wait_http(self, name: str, url: str, timeout: float, *, expect: bytes = b"ok",
                   tls_client: bool = False) -> None:
        ctx = None
        if url.startswith("https"):
            if tls_client:
                ctx = ssl.create_default_context(cafile=str(self._pki.ca.cert))
                ctx.load_cert_chain(str(self._admin.cert), str(self._admin.key))
            else:
                ctx = ssl._create_unverified_context()  # healthz of self-signed components  # noqa: S323
        wait_http(self.supervisor, name, url, timeout, expect=expect, ctx=ctx)

    def _write_info(self) -> None:
        info = {
            "server": self.server,
            "kubeconfig": str(self.kubeconfig),
            "ports": self.ports,
            "versions": {**binaries.versions(), **gpuop_binaries.versions()},
            "bin_dir": str(self.bin_dir),
            "state_dir": str(self.state_dir),
            "attached": self.attached,
            "timings_s": {k: round(v, 2) for k, v in self.timings.items()},
        }
        self.info_file.write_text(json.dumps(info, indent=2) + "\n")
