"""Node checks through Kubernetes, no SSH: ``--hosts=k8s-node://<node>`` and
``--hosts=k8s-node://?selector=<label selector>``.

Each node gets one short-lived pod that runs the same read-only probe
(:func:`gpuconform.node.probe.build_script`) against the node's own root: ``hostPID``, the
node's ``/`` mounted read-only at ``/host`` (recursively where the runtime can:
``recursiveReadOnly: IfPossible``), ``chroot /host /bin/sh -c <probe>`` as its command, the
output read back from the pod's log and turned into facts by the SSH path's own
:func:`gpuconform.node.collect.probe_host`, so verdicts and evidence are those of an SSH run.

Pods are created in batches (``parallel`` creates in flight), followed by ONE watch on their
namespace, and their logs are read as they finish: N nodes cost about 2N concurrent requests
(create, log) plus a handful, never N sequential round trips.

Where the pods live: a companion namespace of the run, ``gpuconform-<run id>-node-probes``,
labelled like the run's namespace (``app.kubernetes.io/managed-by=gpuconform``,
``gpuconform.io/run=<run id>``: the sweeper removes it) but with Pod Security ``privileged``:
the run's own namespace enforces ``restricted`` for the cluster checks' test pods, which a
privileged hostPID pod can never pass, and must keep doing so. The pods are deleted (one
collection delete) as soon as their batch is read; the namespace when the run ends.

Could not check, never "the host failed": a pod that is not scheduled, cannot pull its image or
does not start within ``start_s``, or does not finish within ``probe_s`` after it started, gives
the node an error naming the node, the pod and what it was waiting for (the last state seen).
"""
from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import datetime as dt
import hashlib
import math
import re
import threading
import time
import urllib.parse
from typing import Any, Callable

from testinfra.backend import base

from gpuconform.node.collect import host_deadline_s, probe_host
from gpuconform.node.facts import NodeFacts

SCHEME = "k8s-node"
#: the host name a selector that could not be expanded keeps (its facts carry the reason)
SELECTOR_HOST = "selector="
CONTAINER = "probe"
HOST_MOUNT = "/host"
COMPONENT = {"app.kubernetes.io/component": "node-probe"}
NODE_ANNOTATION = "gpuconform.io/node"
BATCH_LABEL = "gpuconform.io/probe-batch"
NAMESPACE_SUFFIX = "-node-probes"
POD_SECURITY_PRIVILEGED = {"pod-security.kubernetes.io/enforce": "privileged",
                           "pod-security.kubernetes.io/enforce-version": "latest"}
#: waiting reasons that will not change by waiting longer (an image name that cannot be pulled
#: as written, ``imagePullPolicy: Never`` without the image on the node)
HOPELESS = ("InvalidImageName", "ErrImageNeverPull")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

#: selectors this process could not expand: host name -> why (set at configure, read by the probes)
UNRESOLVED: dict[str, str] = {}


# -- host specs -------------------------------------------------------------------------------
def register_backend() -> None:
    """Make ``k8s-node://`` a testinfra connection type, so that ``--hosts`` and the ``host``
    fixture treat it like any other (testinfra looks backends up in this table)."""
    import testinfra.backend
    testinfra.backend.BACKENDS.setdefault(SCHEME, f"{__name__}.K8sNodeBackend")


class K8sNodeBackend(base.BaseBackend):
    """A Kubernetes node as a testinfra host: named by the node, probed only through a probe
    pod (:class:`ProbePods`); it has no shell to run anything else on."""
    NAME = SCHEME

    def __init__(self, name: str, *args: Any, **kwargs: Any):
        self.node = urllib.parse.unquote(name)
        super().__init__(self.node, *args, **kwargs)

    def run(self, command: str, *args: str, **kwargs: Any):
        raise RuntimeError(f"{SCHEME}://{self.node} is read through a read-only probe pod only; "
                           f"what needs a shell on the host (--remediate) needs ssh:// access")


def is_k8s_node(host) -> bool:
    return getattr(host, "backend", None) is not None and host.backend.get_connection_type() == SCHEME


def check_spec(spec: str) -> str | None:
    """Why ``spec`` (a ``k8s-node://`` host spec) is not valid, or None."""
    url = urllib.parse.urlsplit(spec)
    query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
    if url.path not in ("", "/"):
        return "a node name has no '/' (a selector is written k8s-node://?selector=KEY=VALUE)"
    if url.netloc:
        if query:
            return "a node name takes no ?options (k8s-node://NODE or k8s-node://?selector=...)"
        if not (_DNS_SUBDOMAIN.match(url.netloc) and len(url.netloc) <= 253):
            return f"{url.netloc!r} is not a Kubernetes node name (lower-case DNS subdomain)"
        return None
    if set(query) != {"selector"} or len(query["selector"]) != 1 or not query["selector"][0].strip():
        return ("no node: name one (k8s-node://gpu-worker-1) or select by label "
                "(k8s-node://?selector=nvidia.com/gpu.present=true; write a comma inside it as %2C)")
    return None


def selector_of(spec: str) -> str | None:
    if not spec.startswith(f"{SCHEME}://?"):
        return None
    return urllib.parse.parse_qs(urllib.parse.urlsplit(spec).query)["selector"][0].strip()


def expand_selectors(specs: str, connect: Callable[[], Any]) -> str:
    """``specs`` with every ``k8s-node://?selector=S`` replaced by one ``k8s-node://<node>`` per
    node the API server lists for ``S`` (one list request per selector). A selector the server
    cannot answer, or that matches no node, stays as one host (``selector=S``) whose probe is
    an error saying why: the run reports it instead of silently checking nothing."""
    out, cluster = [], None
    for spec in specs.split(","):
        selector = selector_of(spec)
        if selector is None:
            out.append(spec)
            continue
        why = None
        try:
            cluster = cluster or connect()
            doc = cluster.get_json("/api/v1/nodes", {"labelSelector": selector},
                                   what=f"listing the nodes of selector {selector}")
            names = sorted(n["metadata"]["name"] for n in doc.get("items", []))
        except Exception as exc:  # noqa: BLE001 - ClusterError, or no kubernetes config at all
            names, why = [], f"cannot list the nodes of selector {selector!r}: {exc}"
        if not names:
            host = SELECTOR_HOST + selector
            UNRESOLVED[host] = why or f"no node matches selector {selector!r}"
            out.append(f"{SCHEME}://" + urllib.parse.quote(host, safe="=."))
        out += [f"{SCHEME}://{name}" for name in names if f"{SCHEME}://{name}" not in out]
    return ",".join(out)


# -- probe pods --------------------------------------------------------------------------------
class PodProblem(NodeFacts):
    """The node's probe pod did not run to its end: the node could not be checked (the node's
    own reachability verdict is "error", not "fail")."""
    could_not_check = True


@dataclasses.dataclass(frozen=True)
class Settings:
    image: str
    image_pull_policy: str
    start_s: float        # creation until the container runs (scheduling, image pull)
    probe_s: float        # the probe itself, from the container's start
    api_s: float          # one API request
    parallel: int


@dataclasses.dataclass
class _Pod:
    node: str
    name: str
    script: str
    future: cf.Future
    created: float | None = None   # monotonic, when the create was answered
    started: float | None = None   # monotonic, when first seen running
    settled: bool = False
    give_up: float = math.inf      # monotonic: get() stops waiting (only if the batch itself broke)


def pod_name(node: str) -> str:
    """``probe-<node>``, or a hashed one where that is longer than 63 characters (kept to the
    length of a DNS label, which a pod's host name must be)."""
    name = f"probe-{node}"
    if len(name) <= 63:
        return name
    return f"probe-{hashlib.sha256(node.encode()).hexdigest()[:16]}-{node[:30].rstrip('.-')}"


def pod_body(name: str, node: str, script: str, namespace: str, labels: dict, s: Settings) -> dict:
    """One probe pod: pinned to ``node`` through the scheduler (so an unschedulable node says
    why), tolerating every taint (GPU, cordoned, NotReady nodes are probed too), host PID and
    network (the node's processes; no pod network needed), the node's / read-only at /host."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {**labels, **COMPONENT},
                     "annotations": {NODE_ANNOTATION: node}},
        "spec": {
            "restartPolicy": "Never",
            "hostPID": True,
            "hostNetwork": True,
            "automountServiceAccountToken": False,
            "enableServiceLinks": False,
            "terminationGracePeriodSeconds": 1,
            # the kubelet's own end of the pod, should this run die before deleting it
            "activeDeadlineSeconds": math.ceil(s.start_s + host_deadline_s(s.probe_s)),
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}},
            "tolerations": [{"operator": "Exists"}],
            "containers": [{
                "name": CONTAINER, "image": s.image, "imagePullPolicy": s.image_pull_policy,
                "command": ["chroot", HOST_MOUNT, "/bin/sh", "-c", script],
                "securityContext": {"privileged": True},
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}},
                "volumeMounts": [{"name": "host-root", "mountPath": HOST_MOUNT, "readOnly": True,
                                  "recursiveReadOnly": "IfPossible"}],
            }],
            "volumes": [{"name": "host-root", "hostPath": {"path": "/", "type": "Directory"}}],
        },
    }


class _Answered:
    """What the pod printed and how it exited, handed to the SSH path's facts parser as the
    result of ``host.run``."""

    def __init__(self, stdout: str, rc: int | None):
        self.stdout, self.stderr, self.rc = stdout, "", rc

    def run(self, _script: str) -> "_Answered":
        return self


def _container_state(pod: dict) -> dict:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == CONTAINER:
            return cs.get("state") or {}
    return {}


class ProbePods:
    """Probes nodes through pods, in batches; hands out each node's facts."""

    def __init__(self, connect: Callable[[], Any], settings: Settings,
                 script_for: Callable[..., str]):
        """``connect()``: a :class:`gpuconform.cluster.connect.Cluster` (made on first use);
        ``script_for(token, deadline_s)``: the probe script, as for SSH hosts."""
        from gpuconform.cluster.namespace import Cleanup, new_run_id, run_labels
        self._connect = connect
        self.settings = settings
        self._script_for = script_for
        self.cluster = None
        self.cleanup = Cleanup()
        self.run_id = new_run_id()
        self.labels = run_labels(self.run_id)
        self.namespace = f"gpuconform-{self.run_id}{NAMESPACE_SUFFIX}"
        self._pods: dict[str, _Pod] = {}
        self._lock = threading.Lock()
        self._ns_ready: cf.Future | None = None
        self._batches = 0
        self._batch_threads: list[tuple[threading.Thread, list[_Pod]]] = []
        self.pods_created = 0

    # -- the public side ------------------------------------------------------------------------
    def submit(self, nodes: list[str]) -> None:
        """Start probing ``nodes`` (those not asked for yet) in one batch, in the background."""
        with self._lock:
            batch = []
            for node in dict.fromkeys(nodes):
                if node in self._pods:
                    continue
                token = hashlib.sha256(f"{self.run_id}/{node}".encode()).hexdigest()[:24]
                script = self._script_for(token, host_deadline_s(self.settings.probe_s), node)
                self._pods[node] = pod = _Pod(node, pod_name(node), script, cf.Future())
                if node in UNRESOLVED:
                    self._settle(pod, PodProblem(node, {}, UNRESOLVED[node]))
                else:
                    batch.append(pod)
            for pod in batch:
                # + the namespace and its service account (start_s at most), + a margin
                pod.give_up = time.monotonic() + self._watch_timeout(len(batch)) + self.settings.start_s + 30
            self._batches += bool(batch)
            labels = {**self.labels, BATCH_LABEL: str(self._batches)}
        if batch:
            thread = threading.Thread(target=self._run_batch, args=(batch, labels),
                                      name=f"probe pods ({len(batch)})", daemon=True)
            with self._lock:
                self._batch_threads.append((thread, batch))
            thread.start()

    def get(self, node: str) -> NodeFacts:
        self.submit([node])
        pod = self._pods[node]
        # the batch settles every pod by its own deadline; this bound only guards against a bug
        try:
            return pod.future.result(timeout=max(0.0, pod.give_up - time.monotonic()))
        except cf.TimeoutError:
            return PodProblem(node, {}, f"node {node}: its probe pod was not followed to its end (internal)")

    def _watch_timeout(self, pods: int) -> float:
        """The batch's whole wait: every pod's own deadlines, plus the creates of the batch."""
        s = self.settings
        return s.start_s + host_deadline_s(s.probe_s) + 4 * s.api_s + pods / s.parallel * s.api_s

    def close(self) -> list[str]:
        """Delete what the run created (pods with their namespace); returns what could not be.
        A batch whose pods have all settled may still be deleting them (one request): that ends
        first, within a bound, so what it could not do is said and the namespace goes after its
        pods. A batch still watching (the run was cut short) is left to the namespace's deletion."""
        deadline = time.monotonic() + 2 * self.settings.api_s
        with self._lock:
            deleting = [t for t, batch in self._batch_threads if all(p.settled for p in batch)]
        for thread in deleting:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        errors = self.cleanup.run()
        if self.cluster is not None:
            self.cluster.close()
        return errors

    @property
    def request_count(self) -> int:
        return self.cluster.request_count if self.cluster is not None else 0

    # -- one batch ----------------------------------------------------------------------------------
    def _settle(self, pod: _Pod, facts: NodeFacts) -> None:
        pod.settled = True
        if not pod.future.done():
            pod.future.set_result(facts)

    def _problem(self, pod: _Pod, text: str) -> None:
        self._settle(pod, PodProblem(pod.node, {}, f"node {pod.node}: probe pod {self.namespace}/{pod.name} {text}"))

    def _run_batch(self, batch: list[_Pod], labels: dict[str, str]) -> None:
        try:
            self._ensure_namespace()
        except Exception as exc:  # noqa: BLE001 - every pod of the batch must settle
            for pod in batch:
                self._problem(pod, f"was not created: {exc}")
            return
        pool = cf.ThreadPoolExecutor(self.settings.parallel, thread_name_prefix="probe-pod")
        try:
            for pod in batch:
                pool.submit(self._create, pod, labels)
            self._watch(batch, pool, labels)
        except Exception as exc:  # noqa: BLE001
            for pod in batch:
                if not pod.settled:
                    self._problem(pod, f"could not be followed: {type(exc).__name__}: {exc}")
        finally:
            pool.shutdown(wait=True)
            self._delete_pods([p for p in batch if p.created is not None], labels)

    def _ensure_namespace(self) -> None:
        with self._lock:
            first = self._ns_ready is None
            if first:
                self._ns_ready = cf.Future()
        if not first:
            self._ns_ready.result()
            return
        try:
            from gpuconform.cluster.namespace import STARTED_ANNOTATION, RunNamespace
            self.cluster = self._connect()
            ns = RunNamespace(self.cluster, self.cleanup, self.run_id)
            ns.name = self.namespace
            body = {"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": self.namespace, "labels": {**self.labels, **POD_SECURITY_PRIVILEGED},
                                 "annotations": {STARTED_ANNOTATION: dt.datetime.now(dt.timezone.utc).isoformat(
                                     timespec="seconds")}}}
            self.cluster.request("POST", "/api/v1/namespaces", body=body,
                                 what=f"creating namespace {self.namespace} for the probe pods")
            self.cleanup.add(f"namespace {self.namespace}", ns.delete)
            ns.wait_default_service_account(self.settings.start_s)
            self._ns_ready.set_result(True)
        except BaseException as exc:
            self._ns_ready.set_exception(exc)
            raise

    def _create(self, pod: _Pod, labels: dict[str, str]) -> None:
        body = pod_body(pod.name, pod.node, pod.script, self.namespace, labels, self.settings)
        try:
            self.cluster.request("POST", f"/api/v1/namespaces/{self.namespace}/pods", body=body,
                                 what=f"creating probe pod {pod.name}")
        except Exception as exc:  # noqa: BLE001 - e.g. refused by an admission policy
            self._problem(pod, f"was not created: {exc}")
            return
        pod.created = time.monotonic()
        with self._lock:
            self.pods_created += 1

    def _watch(self, batch: list[_Pod], pool: cf.ThreadPoolExecutor, labels: dict[str, str]) -> None:
        """One watch on the namespace until every pod of the batch is settled."""
        from gpuconform.cluster import pods as pod_states
        from gpuconform.cluster.waiting import WaitTimeout, watch_until
        s = self.settings
        by_name = {p.name: p for p in batch}
        seen_rv: dict[str, str] = {}
        last: dict[str, dict] = {}
        swept = [0.0]  # when the deadlines were last looked at (at most twice a second: O(pods) each)

        def evaluate(objects: dict[str, dict]) -> bool:
            now = time.monotonic()
            for obj in objects.values():
                name = obj["metadata"]["name"]
                pod = by_name.get(name)
                if pod is None or pod.settled or seen_rv.get(name) == obj["metadata"].get("resourceVersion"):
                    continue
                seen_rv[name] = obj["metadata"].get("resourceVersion")
                last[name] = obj
                state = _container_state(obj)
                if pod.started is None and ("running" in state or "terminated" in state):
                    pod.started = now
                if pod_states.phase(obj) in ("Succeeded", "Failed"):
                    pod.settled = True
                    pool.submit(self._read, pod, obj)
                    continue
                hopeless = pod_states.waiting(obj, HOPELESS)
                if hopeless:
                    self._problem(pod, f"cannot start: {pod_states.describe_pod(obj)}")
            if now - swept[0] < 0.5:
                return all(p.settled for p in batch)
            swept[0] = now
            for pod in batch:
                if pod.settled or pod.created is None:
                    continue
                seen = pod_states.describe_pod(last.get(pod.name)) if pod.name in last else "not seen yet"
                if pod.started is None and now > pod.created + s.start_s:
                    self._problem(pod, f"did not start within {s.start_s:g} s (profile k8s_node.start_s); "
                                       f"last state seen: {seen}")
                elif pod.started is not None and now > pod.started + host_deadline_s(s.probe_s):
                    self._problem(pod, f"did not finish within {s.probe_s:g} s after it started (profile "
                                       f"timeouts.probe_s); last state seen: {seen}")
            return all(p.settled for p in batch)

        try:
            watch_until(self.cluster, f"{len(batch)} probe pods in {self.namespace}",
                        f"/api/v1/namespaces/{self.namespace}/pods", timeout=self._watch_timeout(len(batch)),
                        query={"labelSelector": ",".join(f"{k}={v}" for k, v in labels.items())},
                        condition=evaluate, describe=lambda objs: f"{sum(not p.settled for p in batch)} "
                                                                  f"of {len(batch)} probe pods unfinished",
                        recheck_s=max(1.0, min(s.start_s, s.probe_s) / 10))  # deadlines: at most 10% late
        except WaitTimeout as exc:
            for pod in batch:
                if not pod.settled:
                    self._problem(pod, f"was not followed to its end: {exc}")

    def _read(self, pod: _Pod, obj: dict) -> None:
        """The finished pod's log, parsed as the SSH path parses what a host printed."""
        rc = (_container_state(obj).get("terminated") or {}).get("exitCode")
        try:
            text = self.cluster.request("GET", f"/api/v1/namespaces/{self.namespace}/pods/{pod.name}/log",
                                        {"container": CONTAINER}, what=f"reading the log of probe pod {pod.name}",
                                        text=True)
        except Exception as exc:  # noqa: BLE001
            self._problem(pod, f"finished ({obj['status'].get('phase')}), but its log could not be read: {exc}")
            return
        facts = probe_host(_Answered(text, rc), pod.node, pod.script)
        if facts.error and not text.strip():
            # no output at all: the container did not run the probe (e.g. no chroot in the image)
            from gpuconform.cluster.pods import describe_pod
            self._problem(pod, f"ended without output: {describe_pod(obj)}")
            return
        self._settle(pod, facts)

    def _delete_pods(self, created: list[_Pod], labels: dict[str, str]) -> None:
        """One collection delete for the batch's pods (the namespace goes at the end of the run)."""
        if not created or self.cluster is None:
            return
        names = {p.name for p in created}
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        try:
            self.cluster.request("DELETE", f"/api/v1/namespaces/{self.namespace}/pods",
                                 {"labelSelector": selector}, body={"gracePeriodSeconds": 0},
                                 what=f"deleting {len(names)} probe pods", missing_ok=True)
        except Exception as exc:  # noqa: BLE001 - the namespace's deletion still takes them
            self.cleanup.errors.append(f"probe pods in {self.namespace}: {exc}")
