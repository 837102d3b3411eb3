"""Proof that the test bed is a real Kubernetes cluster shaped like the article's platform."""
from __future__ import annotations

import re

from kubernetes import client

from testbed.cluster import binaries
from testbed.cluster.platform import ARTICLE_WORKERS, NAMESPACE
from testbed.kube import watch_pod_until
from testbed.waiting import wait_for

VECTORADD_IMAGE = "nvcr.io/nvidia/k8s/cuda-sample:vectoradd-cuda12.5.0-ubuntu22.04"
MIG_LINE = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[0-9a-f-]+)\)$")
GPU_LINE = re.compile(r"^GPU (\d+): (.+) \(UUID: (GPU-[0-9a-f-]+)\)$")


def vectoradd_pod(name: str, limits: dict[str, str], restart_policy: str = "OnFailure",
                  node_selector: dict[str, str] | None = None) -> dict:
    """The getting-started cuda-vectoradd pod, Pod-Security-restricted, tolerating the GPU taint."""
    return {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {
            "restartPolicy": restart_policy,
            "nodeSelector": node_selector or {},
            "securityContext": {"runAsNonRoot": True, "runAsUser": 1000,
                                "seccompProfile": {"type": "RuntimeDefault"}},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{
                "name": "cuda-vectoradd", "image": VECTORADD_IMAGE,
                "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
                "resources": {"limits": limits},
            }],
        },
    }


def terminal(pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


def test_version_is_the_built_one(cluster_bed):
    version = client.VersionApi(cluster_bed.api).get_code()
    assert version.git_version == binaries.versions()["K8S_VERSION"], version


#: what the device plugin advertises per worker: NVIDIA's default-mig-parted-config on an H100
#: (all-1g.10gb: 7 per GPU; all-balanced for device 0x2330: 2x1g.10gb + 1x2g.20gb + 1x3g.40gb)
#: under the mixed strategy, times 8 GPUs -- numbers from NVIDIA's data, not from the suite
ADVERTISED = {
    "gpu-worker-1": {"nvidia.com/mig-1g.10gb": 56},
    "gpu-worker-2": {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8},
    "gpu-worker-3": {"nvidia.com/gpu": 8},
}
#: the operand DaemonSets the operator creates from its assets for the article's values
#: (driver, vGPU, VFIO, sandbox, node-status-exporter, dcgm off; assets/*/0500_daemonset.yaml)
OPERANDS = {"gpu-feature-discovery", "nvidia-container-toolkit-daemonset", "nvidia-dcgm-exporter",
            "nvidia-device-plugin-daemonset", "nvidia-mig-manager", "nvidia-operator-validator"}


def test_gpu_workers_advertise_nvidia_layouts(core_v1):
    nodes = {n.metadata.name: n for n in core_v1.list_node().items}
    for w in ARTICLE_WORKERS:
        advertised = {k: int(v) for k, v in nodes[w.name].status.allocatable.items()
                      if k.startswith("nvidia.com/") and v != "0"}
        assert advertised == ADVERTISED[w.name], w.name
        assert nodes[w.name].metadata.labels["nvidia.com/mig.config.state"] == "success"


def test_real_gpu_operator_reconciled_the_cluster(cluster_bed):
    """The ClusterPolicy comes from the chart, its DaemonSets and status from the controller."""
    apps = client.AppsV1Api(cluster_bed.api)
    ready = {ds.metadata.name: (ds.status.number_ready, ds.status.desired_number_scheduled)
             for ds in apps.list_namespaced_daemon_set(NAMESPACE).items}
    # the MPS control daemon exists but runs nowhere: no node is labelled for MPS sharing
    assert ready == {**{name: (3, 3) for name in OPERANDS}, "nvidia-device-plugin-mps-control-daemon": (0, 0)}
    owners = {ds.metadata.name: [r.kind for r in ds.metadata.owner_references or []]
              for ds in apps.list_namespaced_daemon_set(NAMESPACE).items}
    assert all(kinds == ["ClusterPolicy"] for kinds in owners.values()), owners
    cp = cluster_bed.platform.cluster_policy()
    assert cp["status"]["state"] == "ready" and cp["status"]["namespace"] == NAMESPACE
    writers = {f["manager"] for f in cp["metadata"]["managedFields"] if f.get("subresource") == "status"}
    assert writers == {"gpu-operator"}, writers
    assert cp["spec"]["driver"]["enabled"] is False and cp["spec"]["mig"]["strategy"] == "mixed"
    assert "enabled" not in cp["spec"]["sandboxDevicePlugin"]   # the chart writes it only when true
    cm = client.CoreV1Api(cluster_bed.api).read_namespaced_config_map("default-mig-parted-config", NAMESPACE)
    assert "all-balanced" in cm.data["config.yaml"]
    assert "gpu-operator" in cluster_bed.running_processes()


def test_validator_pods_follow_with_workload(core_v1):
    """The cuda validation runs a workload pod on every worker; the plugin validation does not
    (WITH_WORKLOAD=false in the operator's validator DaemonSet)."""
    pods = core_v1.list_namespaced_pod(NAMESPACE).items
    cuda = {p.spec.node_name for p in pods if p.metadata.labels.get("app") == "nvidia-cuda-validator"
            and p.status.phase == "Succeeded"}
    plugin = [p.metadata.name for p in pods if p.metadata.labels.get("app") == "nvidia-device-plugin-validator"]
    assert cuda == {w.name for w in ARTICLE_WORKERS} and plugin == []


def test_mig_pods_only_land_where_the_slice_exists(core_v1, test_namespace):
    """all-1g.10gb and all-balanced workers both offer 1g.10gb slices; all-disabled offers none."""
    for i in range(4):
        core_v1.create_namespaced_pod(test_namespace, vectoradd_pod(f"mig-{i}", {"nvidia.com/mig-1g.10gb": "1"}))
    nodes = {watch_pod_until(core_v1, test_namespace, f"mig-{i}", terminal, "Succeeded", 90).spec.node_name
             for i in range(4)}
    assert nodes <= {"gpu-worker-1", "gpu-worker-2"}, nodes


def test_mig_pod_lands_on_the_1g10gb_worker_and_passes(core_v1, test_namespace):
    core_v1.create_namespaced_pod(test_namespace, vectoradd_pod(
        "cuda-vectoradd", {"nvidia.com/mig-1g.10gb": "1"}, node_selector={"nvidia.com/mig.config": "all-1g.10gb"}))
    pod = watch_pod_until(core_v1, test_namespace, "cuda-vectoradd", terminal, "Succeeded", 90)
    assert (pod.status.phase, pod.spec.node_name) == ("Succeeded", "gpu-worker-1")
    log = core_v1.read_namespaced_pod_log("cuda-vectoradd", test_namespace)
    lines = log.splitlines()
    assert lines[-6:] == ["[Vector addition of 50000 elements]",
                          "Copy input data from the host memory to the CUDA device",
                          "CUDA kernel launch with 196 blocks of 256 threads",
                          "Copy output data from the CUDA device to the host memory",
                          "Test PASSED", "Done"], log
    migs = [m.groups() for m in map(MIG_LINE.match, lines) if m]
    assert [profile for profile, _, _ in migs] == ["1g.10gb"], log
    assert GPU_LINE.match(lines[0]) and "NVIDIA H100 80GB HBM3" in lines[0], log


def test_whole_gpu_pod_goes_to_the_mig_disabled_worker(core_v1, test_namespace):
    core_v1.create_namespaced_pod(test_namespace, vectoradd_pod("cuda-vectoradd", {"nvidia.com/gpu": "1"}))
    pod = watch_pod_until(core_v1, test_namespace, "cuda-vectoradd", terminal, "Succeeded", 90)
    assert (pod.status.phase, pod.spec.node_name) == ("Succeeded", "gpu-worker-3")
    log = core_v1.read_namespaced_pod_log("cuda-vectoradd", test_namespace)
    assert GPU_LINE.match(log.splitlines()[0]), log
    assert log.rstrip().endswith("Test PASSED\nDone"), log


def test_more_slices_than_exist_stay_pending(core_v1, test_namespace):
    core_v1.create_namespaced_pod(test_namespace, vectoradd_pod("too-big", {"nvidia.com/mig-1g.10gb": "57"}))

    def failed_scheduling():
        events = core_v1.list_namespaced_event(test_namespace, field_selector="involvedObject.name=too-big").items
        return [e.message for e in events if e.reason == "FailedScheduling"]

    messages = wait_for("a FailedScheduling event for too-big", failed_scheduling, 60)
    assert any("Insufficient nvidia.com/mig-1g.10gb" in m for m in messages), messages
    assert core_v1.read_namespaced_pod("too-big", test_namespace).status.phase == "Pending"


def test_vectoradd_failing_scenario(core_v1, test_namespace, cluster_scenario):
    cluster_scenario("vectoradd-failing")
    core_v1.create_namespaced_pod(test_namespace, vectoradd_pod("cuda-vectoradd", {"nvidia.com/mig-1g.10gb": "1"},
                                                                restart_policy="Never"))
    pod = watch_pod_until(core_v1, test_namespace, "cuda-vectoradd", terminal, "a terminal phase", 90)
    assert pod.status.phase == "Failed"
    log = core_v1.read_namespaced_pod_log("cuda-vectoradd", test_namespace)
    assert ("Failed to allocate device vector A (error code CUDA-capable device(s) is/are busy or "
            "unavailable)!") in log


def test_namespace_deletion_completes(core_v1, test_namespace):
    core_v1.create_namespaced_pod(test_namespace, vectoradd_pod("cuda-vectoradd", {"nvidia.com/mig-1g.10gb": "1"}))
    watch_pod_until(core_v1, test_namespace, "cuda-vectoradd", terminal, "Succeeded", 90)
    core_v1.create_namespaced_pod(test_namespace, vectoradd_pod("waiting", {"nvidia.com/mig-1g.10gb": "57"}))
    core_v1.delete_namespace(test_namespace)

    def gone():
        try:
            core_v1.read_namespace(test_namespace)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(f"namespace {test_namespace} to be deleted", gone, 90)


def test_failing_vectoradd_with_restart_on_failure_crash_loops(core_v1, test_namespace, cluster_scenario):
    """restartPolicy OnFailure (the getting-started pod): the kubelet would restart it, so the pod
    stays Running, not ready, its container waiting in CrashLoopBackOff after exit code 1."""
    cluster_scenario("vectoradd-failing")
    core_v1.create_namespaced_pod(test_namespace, vectoradd_pod("cuda-vectoradd", {"nvidia.com/gpu": "1"}))

    def crash_looping(pod) -> bool:
        states = pod.status.container_statuses or []
        return any(s.state.waiting and s.state.waiting.reason == "CrashLoopBackOff" for s in states)

    pod = watch_pod_until(core_v1, test_namespace, "cuda-vectoradd", crash_looping, "CrashLoopBackOff", 90)
    status = pod.status.container_statuses[0]
    assert (pod.status.phase, status.ready, status.last_state.terminated.exit_code) == ("Running", False, 1)
    assert "Failed to allocate device vector A" in core_v1.read_namespaced_pod_log("cuda-vectoradd", test_namespace)


def test_mig_manager_reports_success_before_the_device_plugin_republishes(cluster_bed, core_v1):
    """NVIDIA's order (mig-parted reconfigure.go): pending, GPU clients paused, repartition,
    clients restored, then ``success`` -- the restarted device plugin advertises the new slices
    only afterwards, so a reader of ``success`` alone sees the old allocatable."""
    from kubernetes import watch
    seen: list[tuple[str, dict]] = []
    want = ADVERTISED["gpu-worker-1"]
    rv = core_v1.read_node("gpu-worker-3").metadata.resource_version
    core_v1.patch_node("gpu-worker-3", {"metadata": {"labels": {"nvidia.com/mig.config": "all-1g.10gb"}}})
    try:
        for event in watch.Watch().stream(core_v1.list_node, field_selector="metadata.name=gpu-worker-3",
                                          resource_version=rv, timeout_seconds=120):
            node = event["object"]
            alloc = {k: int(v) for k, v in (node.status.allocatable or {}).items()
                     if k.startswith("nvidia.com/") and v != "0"}
            seen.append((node.metadata.labels.get("nvidia.com/mig.config.state"), alloc))
            if alloc == want:
                break
    finally:
        core_v1.patch_node("gpu-worker-3", {"metadata": {"labels": {"nvidia.com/mig.config": "all-disabled"}}})
        cluster_bed.reset()
    states = [s for s, _ in seen]
    assert "pending" in states and seen[-1] == ("success", want), seen
    first_success = states.index("success", states.index("pending"))
    assert seen[first_success][1] != want, seen   # success came first, the slices after
