"""The one list+watch loop of the bed's controllers (device simulator, node agent): list, hand
every object to the handler, watch from that resourceVersion, relist after an error or a 410,
back off while the API server is away. Runs until ``stop`` is set."""
from __future__ import annotations

import logging
import threading
from typing import Callable

from kubernetes import watch
from kubernetes.client.rest import ApiException

log = logging.getLogger("informer")


def run(list_fn: Callable, handler: Callable[[str, object], None], stop: threading.Event, *,
        on_list: Callable[[list], None] | None = None, name: str = "watch", **list_kwargs) -> None:
    backoff = 0.2
    while not stop.is_set():
        try:
            listed = list_fn(**list_kwargs)
            if on_list:
                on_list(listed.items)
            for obj in listed.items:
                handler("ADDED", obj)
            backoff = 0.2
            w = watch.Watch()
            for event in w.stream(list_fn, resource_version=listed.metadata.resource_version,
                                  timeout_seconds=300, **list_kwargs):
                if stop.is_set():
                    w.stop()
                    break
                if event["type"] == "ERROR":
                    break  # e.g. 410 Gone: relist
                try:
                    handler(event["type"], event["object"])
                except ApiException as exc:
                    log.warning("%s: handling %s failed: %s", name, event["object"].metadata.name, exc.reason)
        except Exception as exc:  # noqa: BLE001 - the API server may be restarting: relist
            log.warning("%s loop: %s: %s", name, type(exc).__name__, exc)
            stop.wait(backoff)
            backoff = min(backoff * 2, 5.0)
