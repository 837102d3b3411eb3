"""Small helpers around the official kubernetes client, used by the test bed only."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

import yaml
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from testbed.waiting import wait_for


def client_for(kubeconfig: Path | str) -> client.ApiClient:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    cfg.retries = 3
    return client.ApiClient(cfg)


def apply_files(api: client.ApiClient, files: Iterable[Path]) -> None:
    """Create the CRDs in ``files``; an existing one is replaced (keeping its resourceVersion)."""
    ext = client.ApiextensionsV1Api(api)
    for f in files:
        for doc in yaml.safe_load_all(Path(f).read_text()):
            if not doc:
                continue
            if doc.get("kind") != "CustomResourceDefinition":
                raise ValueError(f"{f}: only CustomResourceDefinitions are applied here, got {doc.get('kind')}")
            try:
                ext.create_custom_resource_definition(doc)
            except ApiException as exc:
                if exc.status != 409:
                    raise
                current = ext.read_custom_resource_definition(doc["metadata"]["name"])
                doc["metadata"]["resourceVersion"] = current.metadata.resource_version
                ext.replace_custom_resource_definition(doc["metadata"]["name"], doc)


def wait_crds_established(api: client.ApiClient, names: list[str], timeout: float) -> None:
    ext = client.ApiextensionsV1Api(api)

    def established() -> bool:
        for name in names:
            crd = ext.read_custom_resource_definition(name)
            conds = {c.type: c.status for c in (crd.status.conditions or [])}
            if conds.get("Established") != "True":
                return False
        return True

    wait_for(f"CRDs {names} to be Established", established, timeout)


def service_account_exists(api: client.ApiClient, namespace: str, name: str) -> bool:
    try:
        client.CoreV1Api(api).read_namespaced_service_account(name, namespace)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def create_or_update(create, patch, body: dict, *args) -> None:
    """Create ``body``; if it exists, merge-patch it with the same content."""
    try:
        create(*args, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
        patch(body["metadata"]["name"], *args, body)


def ignore_not_found(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except ApiException as exc:
        if exc.status != 404:
            raise
        return None


def watch_pod_until(core: client.CoreV1Api, namespace: str, name: str, done, what: str, timeout: float):
    """Watch one pod until ``done(pod)`` is true; return it. On timeout the error shows the
    last phase and container states seen."""
    import time

    from kubernetes import watch

    deadline = time.monotonic() + timeout
    last = ignore_not_found(core.read_namespaced_pod, name, namespace)
    if last is not None and done(last):
        return last
    rv = last.metadata.resource_version if last is not None else None
    while time.monotonic() < deadline:
        w = watch.Watch()
        for event in w.stream(core.list_namespaced_pod, namespace, field_selector=f"metadata.name={name}",
                              resource_version=rv, timeout_seconds=max(1, int(deadline - time.monotonic()))):
            if event["type"] == "ERROR":
                rv = None
                break
            last = event["object"]
            rv = last.metadata.resource_version
            if event["type"] != "DELETED" and done(last):
                w.stop()
                return last
    status = last.status if last is not None else None
    states = [(c.name, c.state.to_dict()) for c in (status.container_statuses or [])] if status else []
    raise TimeoutError(f"pod {namespace}/{name}: timed out after {timeout:.0f}s waiting for {what}; "
                       f"last phase {status.phase if status else None}, containers {states}")
