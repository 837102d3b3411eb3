"""CUDA actually runs: vectoradd on a whole GPU and on every MIG profile the cluster offers,
MIG slices are exclusive (exhaustion leaves a pod Pending), and a pod without a GPU request
sees no GPU."""
import pytest

from gpuconform.checks import check
from gpuconform.cluster import nodes
from gpuconform.cluster.workloads import VECTORADD_PASSED, devices_seen, gpu_device_nodes, gpu_limits, render, safe_name

# a MIG check when no GPU worker offers a MIG resource: skipped saying why (tests/cluster/conftest.py)
pytestmark = pytest.mark.usefixtures("_nothing_to_judge")

WORKLOAD_FIX = ("read the pod's log and events in the evidence; 'busy or unavailable' means another "
                "process holds the GPU or the device plugin handed out a device it does not own; "
                "check nvidia-device-plugin-daemonset and the node checks (pytest -m node)")


@check("cluster.workload.vectoradd_gpu", "CUDA vectoradd passes on a whole GPU",
       fix=WORKLOAD_FIX, needs=["cluster.operator.clusterpolicy_ready"])
def test_vectoradd_whole_gpu(cluster, cluster_expected, vectoradd_on_gpu):
    """A pod asking nvidia.com/gpu: 1 completes and its log says Test PASSED."""
    run = vectoradd_on_gpu
    assert run.succeeded and VECTORADD_PASSED in run.log, (
        f"vectoradd on nvidia.com/gpu ended {run.phase}, log: {run.log.strip()[-300:] or '(empty)'}; {run.state}")


@pytest.mark.mig
@check("cluster.mig.vectoradd", "CUDA vectoradd passes on the MIG profile",
       fix=WORKLOAD_FIX, needs=["cluster.operator.clusterpolicy_ready"])
def test_vectoradd_mig(cluster, cluster_expected, mig_resource, vectoradd_on_mig):
    """A pod asking one slice of the MIG resource completes and its log says Test PASSED."""
    run = vectoradd_on_mig
    assert run.succeeded and VECTORADD_PASSED in run.log, (
        f"vectoradd on {mig_resource} ended {run.phase}, log: {run.log.strip()[-300:] or '(empty)'}; {run.state}")


@pytest.mark.mig
@check("cluster.mig.pod_limits", "MIG pod asks exactly one slice of its profile",
       fix="an admission webhook or LimitRange rewrote the pod's resources: kubectl get pod -o "
           "jsonpath='{..resources.limits}' and look at mutating webhooks",
       needs=["cluster.operator.clusterpolicy_ready"])
def test_mig_pod_limits(cluster, cluster_expected, mig_resource, vectoradd_on_mig):
    """The pod's spec limits, as the API server stored them, are exactly {<mig resource>: 1}."""
    got = gpu_limits(vectoradd_on_mig.spec)
    assert got == {mig_resource: "1"}, f"limits {got}, expected {{{mig_resource}: 1}}"


@pytest.mark.mig
@check("cluster.mig.placement", "MIG pod lands on a node offering its profile",
       fix="the scheduler placed a MIG pod on a node that does not advertise the profile: check the "
           "node's allocatable and any custom scheduler or nodeName in the pod",
       needs=["cluster.operator.clusterpolicy_ready"])
def test_mig_pod_placement(cluster, cluster_expected, mig_resource, vectoradd_on_mig):
    """The node the pod ran on advertises the MIG resource."""
    offering = nodes.mig_resources_offered(cluster.gpu_nodes()).get(mig_resource, {})
    node = vectoradd_on_mig.node
    assert node in offering, f"pod ran on {node or 'no node'}; nodes offering {mig_resource}: {', '.join(offering)}"


@pytest.mark.mig
@check("cluster.mig.one_device", "MIG pod sees exactly one MIG device of its profile",
       fix="the container sees more than its slice: check that the NVIDIA runtime honours "
           "NVIDIA_VISIBLE_DEVICES from the device plugin (device-list-strategy) and no privileged pod",
       needs=["cluster.operator.clusterpolicy_ready"])
def test_mig_pod_sees_one_device(cluster, cluster_expected, mig_resource, vectoradd_on_mig):
    """`nvidia-smi -L` in the pod lists one GPU with one MIG device, of the requested profile."""
    seen = devices_seen(vectoradd_on_mig.log)
    migs = [m["profile"] for g in seen for m in g["mig"]]
    profile = mig_resource.removeprefix("nvidia.com/mig-")
    assert len(seen) == 1 and [m.replace("+", ".") for m in migs] == [profile], (
        f"pod sees {len(seen)} GPU(s) with MIG devices {migs or 'none'}, expected one {profile}")


@pytest.mark.mig
@check("cluster.mig.exhaustion", "A pod asking more slices than exist stays Pending",
       fix="if the pod was scheduled, a node advertises more slices than it has: compare allocatable "
           "with the cluster's mig-parted config (cluster.mig.allocatable)",
       needs=["cluster.operator.clusterpolicy_ready"])
def test_mig_exhaustion_pending(cluster, cluster_expected, mig_resource, workloads, evidence):
    """A pod asking (slices on the cluster + 1) stays Pending with FailedScheduling
    'Insufficient <mig resource>', and is deleted afterwards."""
    total = sum(nodes.mig_resources_offered(cluster.gpu_nodes()).get(mig_resource, {}).values())
    body = render("cuda-vectoradd.yaml", safe_name("mig-exhaustion", mig_resource), workloads.ns,
                  workloads.images, limits={mig_resource: total + 1})
    run, message = workloads.pending_with_event(body, "FailedScheduling", f"Insufficient {mig_resource}")
    workloads.delete(run.name, wait=True)
    evidence.add(f"pod {run.name} (asked {total + 1})", run.evidence())
    assert message and run.phase == "Pending", (
        f"pod asking {total + 1} x {mig_resource} ({total} on the cluster): {run.state}; "
        f"no FailedScheduling 'Insufficient {mig_resource}' event: {'; '.join(run.events) or 'no events'}")


@check("cluster.workload.isolation", "A pod without a GPU request sees no GPU",
       fix="the NVIDIA runtime is containerd's default and the image sets NVIDIA_VISIBLE_DEVICES=all: set "
           "the device plugin's deviceListStrategy to volume-mounts and accept-nvidia-visible-devices-envvar-when-unprivileged=false "
           "in the toolkit config",
       needs=["cluster.operator.clusterpolicy_ready"])
def test_no_gpu_without_request(cluster, cluster_expected, no_request_probe):
    """The CUDA image on a GPU worker, asking no GPU, lists no /dev/nvidiaN and no GPU in nvidia-smi -L."""
    run = no_request_probe
    assert run.succeeded, f"isolation probe on {run.node} did not complete: {run.state}"
    seen = gpu_device_nodes(run.log) + [g["name"] for g in devices_seen(run.log)]
    assert not seen, f"a pod without GPU request on {run.node} sees: {', '.join(seen)}"
