"""Pod states from API JSON: ready, terminal, image pull trouble, and a one-line description
for messages ("last state seen")."""
from __future__ import annotations

IMAGE_PULL_REASONS = ("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
                      "RegistryUnavailable")
CRASH_REASONS = ("CrashLoopBackOff", "RunContainerError", "CreateContainerError",
                 "CreateContainerConfigError")


def phase(pod: dict) -> str:
    return (pod.get("status") or {}).get("phase") or "Unknown"


def pod_ready(pod: dict) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _statuses(pod: dict):
    st = pod.get("status") or {}
    for kind in ("initContainerStatuses", "containerStatuses"):
        for cs in st.get(kind) or []:
            yield ("init container " if kind.startswith("init") else "container ") + cs.get("name", "?"), cs


def waiting(pod: dict, reasons: tuple[str, ...]) -> tuple[str, str, str] | None:
    """(container, reason, message) of the first container waiting for one of ``reasons``."""
    for who, cs in _statuses(pod):
        w = (cs.get("state") or {}).get("waiting") or {}
        if w.get("reason") in reasons:
            return who, w["reason"], w.get("message", "")
    return None


def image_pull_problem(pod: dict) -> tuple[str, str, str] | None:
    return waiting(pod, IMAGE_PULL_REASONS)


def crash_problem(pod: dict) -> tuple[str, str, str] | None:
    return waiting(pod, CRASH_REASONS)


def describe_pod(pod: dict | None) -> str:
    """``name: Pending; PodScheduled=False Unschedulable: 0/6 nodes ...; container c waiting ...``"""
    if pod is None:
        return "no such pod"
    parts = [f"{pod['metadata'].get('name')}: {phase(pod)}"]
    node = (pod.get("spec") or {}).get("nodeName")
    if node:
        parts[0] += f" on {node}"
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("status") != "True" and c.get("type") in ("PodScheduled", "Initialized") and c.get("reason"):
            parts.append(f"{c['type']}={c['status']} {c.get('reason')}: {c.get('message', '')}".strip())
    for who, cs in _statuses(pod):
        state = cs.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            w = state["waiting"]
            parts.append(f"{who} waiting {w['reason']}" + (f": {w.get('message')}" if w.get("message") else ""))
        elif "terminated" in state and (state["terminated"].get("exitCode") or 0) != 0:
            t = state["terminated"]
            parts.append(f"{who} exited {t.get('exitCode')} ({t.get('reason', '')})")
    return "; ".join(parts)
