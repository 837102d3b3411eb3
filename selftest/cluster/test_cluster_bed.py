"""Proof that the test bed is a real Kubernetes cluster shaped like the article's platform."""
from __future__ import annotations

import re

from kubernetes import client

from gpuconform.mig import mixed_strategy_resources
from testbed.cluster import binaries
from testbed.cluster.kube import watch_pod_until
from testbed.cluster.platform import ARTICLE_WORKERS, NAMESPACE, OPERANDS
from testbed.cluster.waiting import wait_for

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


def test_gpu_workers_advertise_the_catalog_resources(core_v1):
    nodes = {n.metadata.name: n for n in core_v1.list_node().items}
    for w in ARTICLE_WORKERS:
        advertised = {k: int(v) for k, v in nodes[w.name].status.allocatable.items() if k.startswith("nvidia.com/")}
        assert advertised == mixed_strategy_resources(w.model, w.gpu_count, w.mig_config), w.name


def test_gpu_operator_is_deployed_and_ready(cluster_bed):
    apps = client.AppsV1Api(cluster_bed.api)
    ready = {ds.metadata.name: (ds.status.number_ready, ds.status.desired_number_scheduled)
             for ds in apps.list_namespaced_daemon_set(NAMESPACE).items}
    assert ready == {name: (3, 3) for name in OPERANDS}
    cp = client.CustomObjectsApi(cluster_bed.api).get_cluster_custom_object(
        "nvidia.com", "v1", "clusterpolicies", "cluster-policy")
    assert cp["status"]["state"] == "ready"
    assert cp["spec"]["driver"]["enabled"] is False and cp["spec"]["mig"]["strategy"] == "mixed"


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
