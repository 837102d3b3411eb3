"""Pods from ``manifests/`` run in the run's namespace: create (cleanup registered at once),
wait by watch, capture the log and events, delete (or keep, on failure, when asked)."""
from __future__ import annotations

import copy
import dataclasses
import re
import time
from typing import Callable

import yaml

from gpuconform import resources
from gpuconform.cluster import pods as podstate
from gpuconform.cluster.connect import Cluster
from gpuconform.cluster.errors import ClusterError, Forbidden
from gpuconform.cluster.namespace import RunNamespace
from gpuconform.cluster.waiting import Stop, WaitTimeout, wait_for, watch_one, watch_until

VECTORADD_PASSED = "Test PASSED"


class _NoLogYet(Exception):
    """The kubelet has no log for the container yet (HTTP 400 right after it ended)."""


class ImagePullFailed(ClusterError):
    """The workload image could not be pulled in time: the check could not run ("error")."""


@dataclasses.dataclass(frozen=True)
class Images:
    image: str
    pull_secrets: tuple[str, ...] = ()
    pull_policy: str = "IfNotPresent"


@dataclasses.dataclass(frozen=True)
class Deadlines:
    image_pull_s: float = 300   #: stuck in ErrImagePull/ImagePullBackOff for this long -> give up
    run_s: float = 300          #: created -> Succeeded/Failed
    event_s: float = 60         #: waiting for an expected event
    delete_s: float = 60


@dataclasses.dataclass
class PodRun:
    """What a pod did: final state, where it ran, its spec as the API stored it, log and events."""

    name: str
    phase: str
    node: str | None
    spec: dict
    log: str = ""
    events: list[str] = dataclasses.field(default_factory=list)
    state: str = ""  #: one-line description of the last state seen
    logs: dict[str, str] = dataclasses.field(default_factory=dict)  #: per container, for a pod of several

    def log_of(self, container: str) -> str:
        return self.logs.get(container, self.log if not self.logs else "")

    @property
    def succeeded(self) -> bool:
        return self.phase == "Succeeded"

    def evidence(self) -> str:
        out = [f"pod {self.name}: {self.state}"]
        if self.events:
            out += ["events:"] + [f"  {e}" for e in self.events]
        out += ["log:", self.log.rstrip() or "  (empty)"]
        return "\n".join(out)


def load_manifest(name: str) -> dict:
    return yaml.safe_load(resources.manifest(name))


def render(template: str, name: str, ns: RunNamespace, images: Images, *,
           limits: dict[str, int] | None = None, node_selector: dict[str, str] | None = None,
           image: str | None = None, limited: str | None = None) -> dict:
    """The manifest ``template`` with this run's name, namespace, labels, image (``image`` instead
    of the workload image) and resources. ``limits`` replaces the GPU limits (requests of extended
    resources default to limits) of every container, or of the container named ``limited`` only."""
    body = copy.deepcopy(load_manifest(template))
    md = body["metadata"]
    md.update(name=name, namespace=ns.name, labels={**(md.get("labels") or {}), **ns.labels})
    spec = body["spec"]
    if images.pull_secrets:
        spec["imagePullSecrets"] = [{"name": s} for s in images.pull_secrets]
    if node_selector:
        spec["nodeSelector"] = dict(node_selector)
    for c in spec["containers"]:
        c["image"] = image or images.image
        c["imagePullPolicy"] = images.pull_policy
        if limits is not None and limited in (None, c["name"]):
            c.setdefault("resources", {})["limits"] = {k: str(v) for k, v in limits.items()}
    return body


def gpu_limits(spec: dict) -> dict[str, str]:
    """``{resource: quantity}`` of GPU/MIG limits over the containers, as stored by the API
    server (the article's ``jsonpath={..resources.limits}`` check)."""
    out: dict[str, str] = {}
    for c in spec.get("containers") or []:
        for k, v in ((c.get("resources") or {}).get("limits") or {}).items():
            if k.startswith("nvidia.com/"):
                out[k] = str(v)
    return out


class Workloads:
    def __init__(self, cluster: Cluster, namespace: Callable[[], RunNamespace], images: Images,
                 deadlines: Deadlines, *, keep_on_failure: bool = False):
        self.cluster = cluster
        self._namespace = namespace
        self.images = images
        self.deadlines = deadlines
        self.keep_on_failure = keep_on_failure

    @property
    def ns(self) -> RunNamespace:
        """The run's namespace, created when the first pod needs it."""
        return self._namespace()

    # -- create / delete --------------------------------------------------------------------
    def create(self, body: dict) -> str:
        name = body["metadata"]["name"]
        self.cluster.request("POST", f"/api/v1/namespaces/{self.ns.name}/pods", body=body, what=f"creating pod {name}")
        self.ns.cleanup.add(f"pod {self.ns.name}/{name}", lambda: self._delete_now(name))
        return name

    def _delete_now(self, name: str) -> None:
        self.cluster.request("DELETE", f"/api/v1/namespaces/{self.ns.name}/pods/{name}",
                             body={"gracePeriodSeconds": 0}, what=f"deleting pod {name}", missing_ok=True)

    def delete(self, name: str, *, wait: bool = False) -> None:
        """Delete the pod now (its cleanup is then done); with ``wait``, until it is gone."""
        self._delete_now(name)
        self.ns.cleanup.discard(f"pod {self.ns.name}/{name}")
        if wait:
            watch_one(self.cluster, f"pod {name} to be deleted", f"/api/v1/namespaces/{self.ns.name}/pods",
                      name=name, timeout=self.deadlines.delete_s,
                      condition=lambda p: p is None, describe=podstate.describe_pod)

    # -- diagnostics ------------------------------------------------------------------------
    def events(self, name: str) -> list[str]:
        try:
            doc = self.cluster.get_json(f"/api/v1/namespaces/{self.ns.name}/events",
                                        {"fieldSelector": f"involvedObject.name={name}"})
        except ClusterError as exc:
            return [f"(events unreadable: {exc})"]
        items = sorted(doc.get("items", []), key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
        return [f"{e.get('type', '')} {e.get('reason', '')}: {e.get('message', '')}"
                + (f" (x{e['count']})" if (e.get("count") or 1) > 1 else "") for e in items]

    def log(self, name: str, settle_s: float = 10, container: str | None = None) -> str:
        """The pod's log (of ``container``). Right after a container ends the kubelet may briefly
        answer 400 (no logs yet): asked again for ``settle_s``."""
        last: list[ClusterError] = []

        def read() -> list[str]:
            try:
                return [self.cluster.request("GET", f"/api/v1/namespaces/{self.ns.name}/pods/{name}/log",
                                             {"container": container}, what=f"reading the log of {name}", text=True)]
            except Forbidden:
                raise  # no right to read logs: the check could not check, it did not fail
            except ClusterError as exc:
                last[:] = [exc]
                if "HTTP 400" in str(exc):
                    raise _NoLogYet() from None
                raise

        try:
            return wait_for(f"the log of pod {name}", read, timeout=settle_s, retry_on=(_NoLogYet,),
                            backoff_max=0.5, describe=lambda: str(last[0]) if last else "not asked yet")[0]
        except Forbidden:
            raise
        except (ClusterError, WaitTimeout):
            return f"(log unreadable: {last[0] if last else 'no answer'})"

    def _result(self, name: str, pod: dict | None) -> PodRun:
        spec = (pod or {}).get("spec") or {}
        containers = [c["name"] for c in spec.get("containers") or []]
        logs = {c: self.log(name, container=c) for c in containers} if len(containers) > 1 and spec.get("nodeName") else {}
        log = "".join(f"== container {c} ==\n{text}" for c, text in logs.items()) if logs else (
            self.log(name) if spec.get("nodeName") else "")
        return PodRun(name=name, phase=podstate.phase(pod) if pod else "Gone", node=spec.get("nodeName"), spec=spec,
                      log=log, logs=logs, events=self.events(name), state=podstate.describe_pod(pod))

    # -- run to completion ------------------------------------------------------------------
    def run(self, body: dict) -> PodRun:
        """Create the pod, wait until it Succeeded or Failed (or crash-loops), capture its log and
        events, delete it (kept on failure with ``keep_on_failure``). Raises
        :class:`ImagePullFailed` when the image cannot be pulled within the pull deadline."""
        name = self.create(body)
        pulling_since: list[float] = []

        def finished(pod: dict | None):
            if pod is None:
                raise Stop("pod disappeared")
            if podstate.phase(pod) in ("Succeeded", "Failed"):
                return pod
            if podstate.crash_problem(pod):
                return pod
            if podstate.image_pull_problem(pod):
                pulling_since[:1] = pulling_since[:1] or [time.monotonic()]
                if time.monotonic() - pulling_since[0] >= self.deadlines.image_pull_s:
                    raise Stop("image")
            return None

        last: dict | None = None
        try:
            last = watch_one(self.cluster, f"pod {self.ns.name}/{name} to complete",
                             f"/api/v1/namespaces/{self.ns.name}/pods", name=name, timeout=self.deadlines.run_s,
                             condition=finished, describe=podstate.describe_pod,
                             recheck_s=min(5.0, self.deadlines.image_pull_s))
        except (Stop, WaitTimeout) as exc:
            pod = self.cluster.get_json(f"/api/v1/namespaces/{self.ns.name}/pods/{name}", missing_ok=True)
            result = self._result(name, pod)
            self._finish(name, ok=False)
            pull = podstate.image_pull_problem(pod) if pod else None
            if pull:
                raise ImagePullFailed(
                    f"image {self.images.image} not pulled within {self.deadlines.image_pull_s:.0f}s: "
                    f"{pull[1]}: {pull[2]} (set cluster.workloads.image to a reachable mirror and "
                    f"image_pull_secrets if it needs credentials)") from None
            if isinstance(exc, WaitTimeout):
                result.state = str(exc)
            return result
        result = self._result(name, last)
        self._finish(name, ok=result.succeeded)
        return result

    def _finish(self, name: str, *, ok: bool) -> None:
        if ok or not self.keep_on_failure:
            self.delete(name)
        else:  # --keep-on-failure: the failed pod and its namespace stay for inspection
            self.ns.cleanup.discard(f"pod {self.ns.name}/{name}")
            self.ns.keep = True

    # -- stays pending ----------------------------------------------------------------------
    def pending_with_event(self, body: dict, reason: str, needle: str) -> tuple[PodRun, str | None]:
        """Create the pod and wait for an event ``reason`` whose message contains ``needle``
        (e.g. FailedScheduling / ``Insufficient nvidia.com/mig-1g.10gb``). Returns the pod's
        state and the matching message (None on timeout). The pod is NOT deleted here."""
        name = self.create(body)

        def matching(events: dict) -> str | None:
            for e in events.values():
                if e.get("reason") == reason and needle in (e.get("message") or ""):
                    return e["message"]
            return None

        try:
            message = watch_until(self.cluster, f"event {reason} '{needle}' for pod {name}",
                                  f"/api/v1/namespaces/{self.ns.name}/events",
                                  timeout=self.deadlines.event_s, condition=matching,
                                  describe=lambda ev: "; ".join(f"{e.get('reason')}: {e.get('message')}"
                                                                for e in ev.values()) or "no events",
                                  query={"fieldSelector": f"involvedObject.name={name}"})
        except WaitTimeout:
            message = None
        pod = self.cluster.get_json(f"/api/v1/namespaces/{self.ns.name}/pods/{name}", missing_ok=True)
        return self._result(name, pod), message


def devices_seen(log: str) -> list[dict]:
    """GPUs (and their MIG devices) listed by ``nvidia-smi -L`` in a pod's log."""
    from gpuconform.parsers.nvidia_smi import parse_list
    return parse_list(log)


_DEV_NODE = re.compile(r"^/dev/nvidia(\d+|-caps)\b", re.M)


def gpu_device_nodes(log: str) -> list[str]:
    """``/dev/nvidia<N>`` lines the isolation probe printed."""
    return [m.group(0) for m in _DEV_NODE.finditer(log)]


def safe_name(*parts: str) -> str:
    """A DNS-1123 pod name from parts (``vectoradd``, ``mig-1g.10gb``) -> ``vectoradd-mig-1g-10gb``."""
    text = "-".join(parts).lower().replace("nvidia.com/", "")
    text = re.sub(r"[^a-z0-9-]+", "-", text).strip("-")
    return text[:63].rstrip("-")



def gpus_seen(log: str) -> tuple[list[str], list[str]]:
    """(``/dev/nvidia<N>`` device nodes, GPU UUIDs in ``nvidia-smi -L``) a probe's log shows."""
    return ([d for d in gpu_device_nodes(log) if d.removeprefix("/dev/nvidia").isdigit()],
            [g.uuid for g in devices_seen(log)])
