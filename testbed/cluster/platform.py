"""The article's cluster: 3 tainted control-plane nodes and 3 bare-metal H100x8 GPU workers
(KWOK nodes), NVIDIA's GPU Operator installed from its chart with the article's values and its
real controller reconciling them (``testbed/gpuoperator``).

What the bed itself writes is only what the platform team or the hardware provides: the nodes,
their simulated GPUs and the admin's ``nvidia.com/mig.config`` label (:mod:`testbed.cluster.nodes`).
Everything else -- operand DaemonSets, ``nvidia.com/gpu.deploy.*`` and ``gpu.present`` labels,
the default-mig-parted-config ConfigMap, ClusterPolicy status -- comes from the operator; GFD
labels, allocatable and ``mig.config.state`` from the node agent playing the operands.
"""
from __future__ import annotations

import json

from kubernetes import client

from testbed.cluster.hardware import GPUS
from testbed.cluster.nodeagent import ANN_GPUS, ANN_PLUGIN, plugin_resources
from testbed.cluster.nodes import (ARTICLE_WORKERS, CLUSTER_POLICY, CONTROL_PLANE_NODES, NAMESPACE, GpuWorker,
                                   control_plane_node, gpu_worker_node)
from testbed.gpuoperator import operator
from testbed.kube import create_or_update
from testbed.waiting import wait_for


class Platform:
    """Creates the nodes, installs the GPU Operator chart, and waits for the real controller and
    the simulated operands to reach the article's healthy cluster."""

    def __init__(self, api: client.ApiClient, workers=ARTICLE_WORKERS, control_plane=CONTROL_PLANE_NODES,
                 values: dict | None = None, *, stack: str = "gpu-operator", objects: tuple[dict, ...] = ()):
        """``stack``: gpu-operator (``values`` over the article's) or device-plugin (``values`` of
        the nvidia-device-plugin chart); ``objects``: what the admin creates with the install."""
        self.api = api
        self.core = client.CoreV1Api(api)
        self.apps = client.AppsV1Api(api)
        self.custom = client.CustomObjectsApi(api)
        self.workers = tuple(workers)
        self.control_plane = tuple(control_plane)
        self.stack = stack
        self.objects = tuple(objects)
        self.site_values = values or {}
        self.values = operator.merge_values(operator.ARTICLE_VALUES, values or {}) if stack == "gpu-operator" else {}
        self.rendered: list[dict] = []

    def worker(self, name: str) -> GpuWorker:
        for w in self.workers:
            if w.name == name:
                return w
        raise KeyError(f"no GPU worker {name!r}; have {[w.name for w in self.workers]}")

    def create_nodes(self) -> None:
        for name in self.control_plane:
            create_or_update(self.core.create_node, self.core.patch_node, control_plane_node(name))
        for w in self.workers:
            create_or_update(self.core.create_node, self.core.patch_node, gpu_worker_node(w))

    def install_operator(self) -> list[dict]:
        """``helm install`` of the operator's chart (or, without the operator, of the device
        plugin's), then the admin's own objects; returns the rendered objects."""
        if self.stack == "device-plugin":
            from testbed.deviceplugin import chart
            self.rendered = chart.install(self.api, self.site_values)
        else:
            self.rendered = operator.install(self.api, self.values, namespace=NAMESPACE)
        if self.objects:
            operator.apply(self.api, [dict(o) for o in self.objects], namespace=NAMESPACE)
        return self.rendered

    @property
    def namespace(self) -> str:
        """Where the GPU stack's DaemonSets run."""
        if self.stack == "device-plugin":
            from testbed.deviceplugin import chart
            return chart.NAMESPACE
        return NAMESPACE

    def mig_managed(self, worker: GpuWorker) -> bool:
        """Whether the operator's MIG manager runs on ``worker`` (its GPU has MIG, the values enable it)."""
        return (self.stack == "gpu-operator" and bool(GPUS[worker.gpu].mig_profiles)
                and (self.values.get("migManager") or {}).get("enabled", True) is not False)

    def upgrade(self, values: dict | None, *, settled=None, timeout: float = 180) -> None:
        """``helm upgrade`` with ``values`` over the article's (None: back to the article's).
        The operator then rolls its operands at its own pace: wait until ``settled()`` (the
        change the caller made is visible) and the platform is healthy again."""
        self.values = operator.merge_values(operator.ARTICLE_VALUES, values or {})
        self.rendered = operator.upgrade(self.api, self.rendered, self.values, namespace=NAMESPACE)
        if settled is not None:
            wait_for("the upgrade to take effect", settled, timeout)
        self.wait_healthy(timeout)

    def gpu_allocatable(self) -> dict[str, dict[str, str]]:
        """Per GPU worker, its non-zero nvidia.com/* allocatable."""
        return {w.name: {k: str(v) for k, v in (self.core.read_node(w.name).status.allocatable or {}).items()
                         if k.startswith("nvidia.com/") and str(v) != "0"} for w in self.workers}

    # -- health -----------------------------------------------------------------------------
    def cluster_policy(self) -> dict:
        return self.custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", CLUSTER_POLICY)

    def expected_allocatable(self, node: client.V1Node) -> dict[str, int] | None:
        """What the node's device plugin advertises for what it registered (None: not yet)."""
        hw = json.loads(node.metadata.annotations[ANN_GPUS])
        registered = (node.metadata.annotations or {}).get(ANN_PLUGIN)
        if registered is None:
            return None
        plugin = json.loads(registered)
        return {k: v for k, v in plugin_resources(hw, plugin["strategy"], replication=plugin["replication"]).items() if v}

    def health_problems(self) -> list[str]:
        """What differs from the healthy article cluster (empty list = healthy)."""
        problems = []
        nodes = {n.metadata.name: n for n in self.core.list_node().items}
        for name in (*self.control_plane, *(w.name for w in self.workers)):
            node = nodes.get(name)
            if not (node and any(c.type == "Ready" and c.status == "True" for c in (node.status.conditions or []))):
                problems.append(f"node {name} not Ready")
        for w in self.workers:
            node = nodes.get(w.name)
            if node is None:
                continue
            labels = node.metadata.labels or {}
            if self.mig_managed(w) and labels.get("nvidia.com/mig.config.state") != "success":
                problems.append(f"{w.name} mig.config.state={labels.get('nvidia.com/mig.config.state')}")
            if "nvidia.com/gpu.product" not in labels:
                problems.append(f"{w.name}: no GFD labels yet")
            have = {k: int(str(v)) for k, v in (node.status.allocatable or {}).items()
                    if k.startswith("nvidia.com/") and str(v) != "0"}
            if have != self.expected_allocatable(node):
                problems.append(f"{w.name} allocatable {have}")
        dss = self.apps.list_namespaced_daemon_set(self.namespace).items
        if not dss:
            problems.append("no operand DaemonSets yet")
        for ds in dss:
            st = ds.status
            if (st.number_ready or 0) != (st.desired_number_scheduled or 0):
                problems.append(f"daemonset {ds.metadata.name} ready {st.number_ready}/{st.desired_number_scheduled}")
            elif ((st.updated_number_scheduled or 0) != (st.desired_number_scheduled or 0)
                  or (st.observed_generation or 0) < (ds.metadata.generation or 0)):
                problems.append(f"daemonset {ds.metadata.name} rolling out ({st.updated_number_scheduled} of "
                                f"{st.desired_number_scheduled} updated)")
        if self.stack != "gpu-operator":
            return problems
        pods = self.core.list_namespaced_pod(NAMESPACE, label_selector="app=nvidia-cuda-validator").items
        for w in self.workers:
            if not any(p.spec.node_name == w.name and p.status.phase == "Succeeded" for p in pods):
                problems.append(f"{w.name}: no Succeeded nvidia-cuda-validator pod")
        state = (self.cluster_policy().get("status") or {}).get("state")
        if state != "ready":
            problems.append(f"clusterpolicy state {state}")
        return problems

    def wait_healthy(self, timeout: float) -> None:
        def healthy():
            problems = self.health_problems()
            if problems:
                raise AssertionError("; ".join(problems))
            return True
        wait_for("the simulated platform to be healthy", healthy, timeout)
