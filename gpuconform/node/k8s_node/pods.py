"""The batched probe-pod client of ``k8s-node://`` hosts: a probe pool
(:class:`gpuconform.node.pool.ProbePool`) whose probes are pods (:mod:`.template`).

Pods are created in batches (``parallel`` creates in flight), followed by ONE watch on their
namespace, and their logs are read as they finish: N nodes cost about 2N concurrent requests
(create, log) plus a handful, never N sequential round trips. A pod's log is the probe's output,
parsed as what an SSH host printed (:func:`gpuconform.node.collect.facts_from_output`), so
verdicts and evidence are those of an SSH run.

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
import threading
import time
from typing import Any, Callable, Iterable

from gpuconform.cluster import pods as pod_states
from gpuconform.cluster.namespace import STARTED_ANNOTATION, Cleanup, RunNamespace, new_run_id, run_labels
from gpuconform.cluster.waiting import WaitTimeout, watch_until
from gpuconform.node.collect import facts_from_output, host_deadline_s
from gpuconform.node.facts import NodeFacts
from gpuconform.node.k8s_node.template import (CONTAINER, NAMESPACE_SUFFIX, POD_SECURITY_PRIVILEGED, Settings,
                                               pod_body, pod_name)
from gpuconform.node.pool import label

BATCH_LABEL = "gpuconform.io/probe-batch"
#: waiting reasons that will not change by waiting longer (an image name that cannot be pulled
#: as written, ``imagePullPolicy: Never`` without the image on the node)
HOPELESS = ("InvalidImageName", "ErrImageNeverPull")


class PodProblem(NodeFacts):
    """The node's probe pod did not run to its end: the node could not be checked (the node's
    own reachability verdict is "error", not "fail")."""
    could_not_check = True


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



def _container_state(pod: dict) -> dict:
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        if cs.get("name") == CONTAINER:
            return cs.get("state") or {}
    return {}


class ProbePods:
    """The probe pool of ``k8s-node://`` hosts: probes nodes through pods, in batches; hands out
    each node's facts."""

    def __init__(self, connect: Callable[[], Any], settings: Settings, script_for: Callable[..., str],
                 unresolved: dict[str, str] | None = None):
        """``connect()``: a :class:`gpuconform.cluster.connect.Cluster` (made on first use);
        ``script_for(token, deadline_s, host)``: the probe script, as for SSH hosts;
        ``unresolved``: hosts that stand for a selector that could not be resolved -> why
        (:func:`gpuconform.node.k8s_node.spec.resolve`): their facts are that error, no pod."""
        self._connect = connect
        self.settings = settings
        self.deadline_s = settings.probe_s
        self._script_for = script_for
        self._unresolved = dict(unresolved or {})
        self.cluster = None
        self.cleanup = Cleanup()
        self.run_id = new_run_id()
        self.labels = run_labels(self.run_id)
        self.namespace = f"gpuconform-{self.run_id}{NAMESPACE_SUFFIX}"
        self._pods: dict[str, _Pod] = {}
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._ns_ready: cf.Future | None = None
        self._batches = 0
        self._batch_threads: list[tuple[threading.Thread, list[_Pod]]] = []
        self.pods_created = 0

    # -- the pool's contract (gpuconform/node/pool.py) ------------------------------------------------
    def submit(self, hosts: Iterable[Any]) -> None:
        """Start probing ``hosts`` (those not asked for yet) in one batch, in the background."""
        self._start([label(h) for h in hosts], again=False)

    def get(self, host: Any) -> NodeFacts:
        self.submit([host])
        return self._wait(self._pods[label(host)])

    def reprobe(self, host: Any) -> NodeFacts:
        """Probe the node once more, with a pod of its own, under the same deadlines."""
        node = label(host)
        self._start([node], again=True)
        return self._wait(self._pods[node])

    def close(self) -> list[str]:
        """Delete what the run created (pods with their namespace); returns the summary line and
        what could not be deleted. A batch whose pods have all settled may still be deleting them
        (one request): that ends first, within a bound, so what it could not do is said and the
        namespace goes after its pods. A batch still watching (the run was cut short) is left to
        the namespace's deletion."""
        deadline = time.monotonic() + 2 * self.settings.api_s
        with self._lock:
            deleting = [t for t, batch in self._batch_threads if all(p.settled for p in batch)]
        for thread in deleting:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        errors = self.cleanup.run()
        if self.cluster is not None:
            self.cluster.close()
        return [f"k8s-node probes: {self.pods_created} pods in namespace {self.namespace} (deleted), "
                f"{self.request_count} API requests"] + [f"cleanup: {e}" for e in errors]

    @property
    def request_count(self) -> int:
        return self.cluster.request_count if self.cluster is not None else 0

    # -- pods and batches -----------------------------------------------------------------------
    def _start(self, nodes: list[str], again: bool) -> None:
        """One batch of pods for ``nodes``: those not probed yet, or (``again``) all of them anew."""
        with self._lock:
            batch = []
            for node in dict.fromkeys(nodes):
                if node in self._pods and not again:
                    continue
                attempt = self._attempts[node] = self._attempts.get(node, -1) + 1
                token = hashlib.sha256(f"{self.run_id}/{node}/{attempt}".encode()).hexdigest()[:24]
                script = self._script_for(token, host_deadline_s(self.settings.probe_s), node)
                self._pods[node] = pod = _Pod(node, pod_name(node, attempt), script, cf.Future())
                if node in self._unresolved:
                    self._settle(pod, PodProblem(node, {}, self._unresolved[node]))
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

    def _wait(self, pod: _Pod) -> NodeFacts:
        # the batch settles every pod by its own deadline; this bound only guards against a bug
        try:
            return pod.future.result(timeout=max(0.0, pod.give_up - time.monotonic()))
        except cf.TimeoutError:
            return PodProblem(pod.node, {}, f"node {pod.node}: its probe pod was not followed to its end (internal)")

    def _watch_timeout(self, pods: int) -> float:
        """The batch's whole wait: every pod's own deadlines, plus the creates of the batch."""
        s = self.settings
        return s.start_s + host_deadline_s(s.probe_s) + 4 * s.api_s + pods / s.parallel * s.api_s

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
        if not text.strip():
            # no output at all: the container did not run the probe (e.g. no chroot in the image)
            self._problem(pod, f"ended without output: {pod_states.describe_pod(obj)}")
            return
        self._settle(pod, facts_from_output(pod.node, text, "", rc))

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
