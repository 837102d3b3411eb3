"""The test bed as one object: control plane + the article's platform + fault scenarios.

    bed = TestBed().start()          # or: with TestBed() as bed: ...
    bed.kubeconfig                   # admin kubeconfig (Path) for the suite / kubectl
    bed.api                          # kubernetes.client.ApiClient
    bed.apply_scenario("clusterpolicy-notready"); ...; bed.reset()
    bed.stop()
"""
from __future__ import annotations

import time
from pathlib import Path

from testbed.cluster.controlplane import DEFAULT_STATE, ControlPlane
from testbed.cluster.platform import ARTICLE_WORKERS, CONTROL_PLANE_NODES, Platform
from testbed.cluster.scenarios import Scenarios
from testbed.cluster.sites import Site
from testbed.kube import client_for


class TestBed:
    __test__ = False  # not a pytest test class

    def __init__(self, state_dir: Path | str = DEFAULT_STATE, *, attached: bool = True,
                 allow_build: bool = True, workers=ARTICLE_WORKERS, control_plane=CONTROL_PLANE_NODES,
                 values: dict | None = None, site: Site | None = None):
        """``values``: Helm values over the article's (testbed/gpuoperator/operator.py); ``site``:
        one of testbed/cluster/sites.py instead (its workers, stack, values and objects)."""
        self.control_plane = ControlPlane(state_dir, attached=attached, allow_build=allow_build)
        self._workers, self._cp_nodes, self._values = workers, control_plane, values
        self._site = site
        self.api = None
        self.platform: Platform | None = None
        self.scenarios: Scenarios | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self, *, layout: bool = True, timeout: float = 240) -> "TestBed":
        t0 = time.monotonic()
        self.control_plane.start(timeout=timeout)
        try:
            self.api = client_for(self.kubeconfig)
            site = self._site
            self.platform = (Platform(self.api, site.workers, self._cp_nodes, site.values, stack=site.stack,
                                      objects=site.objects) if site else
                             Platform(self.api, self._workers, self._cp_nodes, values=self._values))
            self.scenarios = Scenarios(self.platform)
            if layout:
                self.platform.create_nodes()
                rendered = self.platform.install_operator()
                if self.platform.stack == "gpu-operator":
                    self.control_plane.start_gpu_operator(rendered)
                self.platform.wait_healthy(max(30.0, timeout - (time.monotonic() - t0)))
        except BaseException:
            self.stop()
            raise
        self.control_plane.timings["ready"] = time.monotonic() - t0
        self.control_plane._write_info()
        return self

    def stop(self) -> list[str]:
        if self.api is not None:
            self.api.close()
            self.api = None
        return self.control_plane.stop()

    def __enter__(self) -> "TestBed":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- what a user needs ----------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        return self.control_plane.kubeconfig

    @property
    def server(self) -> str:
        return self.control_plane.server

    @property
    def timings(self) -> dict[str, float]:
        return dict(self.control_plane.timings)

    def running_processes(self) -> list[str]:
        return self.control_plane.running()

    # -- faults ---------------------------------------------------------------------------------
    @property
    def scenario_names(self) -> list[str]:
        assert self.scenarios is not None, "start() the test bed first"
        return self.scenarios.names

    def apply_scenario(self, name: str) -> None:
        assert self.scenarios is not None, "start() the test bed first"
        self.scenarios.apply(name)

    def reset(self, timeout: float = 120) -> None:
        assert self.scenarios is not None, "start() the test bed first"
        self.scenarios.reset(timeout)
