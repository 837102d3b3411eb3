"""The CNCF Kubernetes AI Conformance checklist (gpuconform/aiconformance/, the program's own
files), one check per requirement the suite decides, ``aiconf.<id>``, run only with
``-m aiconformance``. Each mirrors the automated test of kubernetes-sigs/ai-conformance
(test/*.go) where there is one. What the suite cannot decide (gang scheduling, autoscaling,
inference gateways ...) has no check: the PRODUCT.yaml export lists it with the status the
profile declares (``ai_conformance.requirements``), never invented. A requirement the profile's
checklist does not list, or one the profile declares N/A, is skipped saying so."""
import pytest

from gpuconform.aiconformance import checklist
from gpuconform.checks import check
from gpuconform.cluster import aiconf
from gpuconform.cluster.metrics import proxy_path, scrape
from gpuconform.cluster.workloads import gpus_seen, render
from gpuconform.errors import CannotTell
from gpuconform.parsers.nvidia_smi import parse_driver_and_cuda
from gpuconform.parsers.prometheus import parse_samples

pytestmark = pytest.mark.aiconformance


@pytest.fixture(autouse=True)
def _requirement(request, ai_expected, evidence):
    """The requirement of this check in the profile's checklist version: its level as evidence, or
    a skip where that checklist has no such requirement or the profile declares it N/A."""
    requirement = request.node.get_closest_marker("check").kwargs["id"].removeprefix("aiconf.")
    version, declared = ai_expected.chosen_checklist(), ai_expected.requirements.get(requirement)
    level = checklist.level(version, requirement)
    if level is None:
        pytest.skip(f"{requirement} is not a requirement of checklist {version} (ai_conformance.checklist)")
    if declared is not None and declared.status == "N/A":
        pytest.skip(f"{requirement}: the profile declares N/A: {declared.notes}")
    evidence.add("requirement", f"{requirement}: {level} in the AI Conformance checklist {version}")
    return requirement


def one_device_resource(cluster) -> str:
    """The resource of one device to ask: a whole GPU where offered, else a MIG slice."""
    from gpuconform.cluster import nodes
    gpu_nodes = cluster.gpu_nodes()
    found = "nvidia.com/gpu" if nodes.whole_gpus_offered(gpu_nodes) else next(iter(nodes.mig_resources_offered(gpu_nodes)), None)
    if found is None:
        raise CannotTell("no GPU worker offers nvidia.com/gpu or a MIG resource (cluster.nodes.gpu_workers)")
    return found


# -- secure_accelerator_access -----------------------------------------------------------------
#: case -> (pod, container, GPUs it must see): kubernetes-sigs/ai-conformance TestSecureAcceleratorAccess's
#: PositiveAccessTest, NegativeIsolationTest and MultiContainerIsolationTest
ACCESS = {"asked-one": ("one", "probe", 1), "asked-none": ("none", "probe", 0),
          "pair-asked-one": ("pair", "with-gpu", 1), "pair-asked-none": ("pair", "without-gpu", 0)}


@pytest.fixture(params=list(ACCESS))
def access_case(request) -> str:
    return request.param


@pytest.fixture
def access_run(request, access_case, cluster, workloads, _pod_runs, evidence):
    pod = ACCESS[access_case][0]
    if pod == "none":
        return request.getfixturevalue("no_request_probe")
    resource = one_device_resource(cluster)
    template, name, limited = {"one": ("gpu-isolation-probe.yaml", "gpu-access-one", None),
                               "pair": ("gpu-access-probe.yaml", "gpu-access-pair", "with-gpu")}[pod]
    run = _pod_runs.get(name, lambda: workloads.run(render(template, name, workloads.ns, workloads.images,
                                                           limits={resource: 1}, limited=limited)))
    evidence.add(f"pod {run.name} ({resource} x1)", run.evidence())
    return run


@check("aiconf.secure_accelerator_access", "A container sees exactly the GPUs it asked for",
       fix="a container sees a GPU it did not ask for: set the toolkit's accept-nvidia-visible-devices-envvar-"
           "when-unprivileged=false and the device plugin's deviceListStrategy to volume-mounts or cdi-cri; "
           "no privileged GPU pods", needs=["cluster.operator.clusterpolicy_ready"])
def test_secure_accelerator_access(cluster, cluster_expected, access_case, access_run):
    """secure_accelerator_access (mirrors kubernetes-sigs/ai-conformance TestSecureAcceleratorAccess):
    a container asking one GPU sees one, a container asking none sees none, also beside a container
    of its pod that asked one -- counted in /dev/nvidiaN and in nvidia-smi -L."""
    _, container, want = ACCESS[access_case]
    device_nodes, gpus = gpus_seen(access_run.log_of(container))
    assert access_run.succeeded and len(device_nodes) == len(gpus) == want, (
        f"container {container} of pod {access_run.name} on {access_run.node} sees {len(gpus)} GPU(s) in "
        f"nvidia-smi -L {gpus} and device nodes {device_nodes}, expected {want}; {access_run.state}")


# -- driver_runtime_management -----------------------------------------------------------------
@pytest.fixture
def driver_probe(cluster, workloads, ai_expected, _pod_runs, evidence):
    """The plain image asking one device, printing what the injected nvidia-smi reports; run once."""
    resource = one_device_resource(cluster)
    run = _pod_runs.get("driver-runtime", lambda: workloads.run(render(
        "driver-runtime-probe.yaml", "driver-runtime-probe", workloads.ns, workloads.images,
        limits={resource: 1}, image=ai_expected.plain_image)))
    evidence.add(f"pod {run.name} ({ai_expected.plain_image}, {resource} x1)", run.evidence())
    return run


@check("aiconf.driver_runtime_management", "The driver and CUDA versions a GPU pod sees are those its node advertises",
       fix="the node's driver changed under its advertisement, or the container sees other driver libraries than "
           "the kernel module's ('Driver/library version mismatch': reboot or reload the driver after an upgrade); "
           "GPU Feature Discovery (or the DRA driver) relabels the node once NVML answers",
       needs=["cluster.operator.clusterpolicy_ready"])
@pytest.mark.parametrize("version_kind", ["driver", "cuda"])
def test_driver_runtime_management(cluster, cluster_expected, ai_expected, version_kind, driver_probe, evidence):
    """driver_runtime_management (mirrors kubernetes-sigs/ai-conformance TestAcceleratorDriverRuntimeManagement):
    nvidia-smi, injected by the container runtime into a plain image asking one GPU, reports the driver
    (CUDA) version the pod's node advertises: a DRA ResourceSlice attribute where the profile names a DRA
    driver, else GPU Feature Discovery's nvidia.com/cuda.driver-version.full (cuda.runtime-version.full)."""
    slices = aiconf.resource_slices(cluster.cluster, driver_probe.node, ai_expected.dra_driver) if (
        ai_expected.dra_driver and driver_probe.node) else []
    where, advertised = aiconf.advertised_version(cluster.node(driver_probe.node), slices, version_kind) if (
        driver_probe.node) else ("no node", None)
    seen = dict(zip(("driver", "cuda"), parse_driver_and_cuda(driver_probe.log)))[version_kind]
    evidence.add(f"{version_kind} version advertised", f"{where}: {advertised or 'none'}")
    assert seen and advertised and aiconf.same_version(seen, advertised), (
        f"{version_kind} version seen in pod {driver_probe.name} on {driver_probe.node}: {seen or 'none'} "
        f"(log: {driver_probe.log.strip()[-200:] or '(empty)'}); advertised by {where}: {advertised or 'none'}")


# -- accelerator_metrics -----------------------------------------------------------------------
@pytest.fixture
def metrics_scrape(cluster, cluster_expected, ai_expected, _pod_runs, evidence):
    m = ai_expected.metrics
    got = _pod_runs.get("metrics-scrape", lambda: scrape(
        cluster.cluster, url=m.url, proxy=proxy_path(m.namespace, m.service, m.port, m.path),
        timeout=cluster_expected.timeouts.api_s))
    evidence.add(f"scrape of {got.where}", got.problem or got.text[:8000])
    return got


@check("aiconf.accelerator_metrics", "The metrics endpoint serves utilization and memory per device",
       fix="deploy dcgm-exporter (the GPU Operator's dcgmExporter.enabled) or name the platform's endpoint in "
           "ai_conformance.metrics; keep its device labels (gpu, UUID) in any relabelling or aggregation")
@pytest.mark.parametrize("metric_kind", ["utilization", "memory"])
def test_accelerator_metrics(cluster, ai_expected, metric_kind, metrics_scrape):
    """accelerator_metrics (mirrors kubernetes-sigs/ai-conformance TestAcceleratorPerformanceMetrics):
    the endpoint of ai_conformance.metrics answers, and its utilization (memory) metric has samples,
    each naming its device by one of the device labels (dcgm-exporter: gpu, UUID; GPU_I_ID for MIG)."""
    m = ai_expected.metrics
    name = m.utilization_metric if metric_kind == "utilization" else m.memory_metric
    samples = [s for s in parse_samples(metrics_scrape.text) if s.name == name]
    bare = [s.labels for s in samples if not set(m.device_labels) & set(s.labels)]
    assert not metrics_scrape.problem and samples and not bare, (
        f"{metrics_scrape.where}: " + (metrics_scrape.problem or (f"no {name} sample" if not samples else
                                       f"{len(bare)} of {len(samples)} {name} samples carry none of the device "
                                       f"labels {list(m.device_labels)}: {bare[:3]}")))


# -- gpu_sharing -------------------------------------------------------------------------------
@check("aiconf.gpu_sharing", "A GPU sharing strategy is offered and a pod runs on a shared device",
       fix="offer MIG (the GPU Operator's mig.strategy and a mig-parted config) or time-slicing/MPS (the device "
           "plugin's sharing config) and check the cluster.mig.* and cluster.node.sharing checks",
       needs=["cluster.operator.clusterpolicy_ready"])
@pytest.mark.parametrize("sharing_item", ["advertised", "usable"])
def test_gpu_sharing(cluster, cluster_expected, sharing_item, vectoradd_on, evidence):
    """gpu_sharing (no automated upstream test): a GPU worker advertises MIG devices as schedulable
    resources or time-sliced/MPS replicas, and CUDA vectoradd asking one such device completes."""
    offered, resource = aiconf.sharing_offered(cluster.gpu_nodes()), aiconf.shared_resource(cluster.gpu_nodes())
    evidence.add("sharing offered", "\n".join(f"{n}: {', '.join(r)}" for n, r in offered.items()) or "none")
    assert offered and resource, "no GPU worker offers MIG devices or GPU replicas (time-slicing, MPS)"
    if sharing_item == "usable":
        run = vectoradd_on(resource)
        assert run.succeeded, f"vectoradd on {resource} ended {run.phase}: {run.log.strip()[-300:]}; {run.state}"


# -- dra_support -------------------------------------------------------------------------------
@check("aiconf.dra_support", "The DRA API is served, with the DeviceClass and ResourceSlices of the DRA driver",
       fix="Kubernetes >= 1.34 serves resource.k8s.io/v1 unless --runtime-config turns it off; install the "
           "DRA driver the profile names (NVIDIA: k8s-dra-driver-gpu) or set ai_conformance.dra_driver: null")
@pytest.mark.parametrize("dra_item", ["api", "driver"])
def test_dra_support(cluster, ai_expected, dra_item, evidence):
    """dra_support (no automated upstream test): the API server serves resource.k8s.io/v1; where the
    profile names a DRA driver, a DeviceClass selecting it and ResourceSlices it publishes exist."""
    if dra_item == "api":
        versions = aiconf.dra_api_versions(cluster.cluster)
        assert "v1" in versions, f"resource.k8s.io versions served: {versions or 'none'} (v1 expected)"
        return
    if ai_expected.dra_driver is None:
        pytest.skip("the profile names no DRA driver (ai_conformance.dra_driver)")
    classes, slices = aiconf.dra_driver_objects(cluster.cluster, ai_expected.dra_driver)
    evidence.add("DRA objects", f"DeviceClasses: {classes}\nResourceSlices: {slices}")
    assert classes and slices, (f"DRA driver {ai_expected.dra_driver}: DeviceClasses selecting it {classes or 'none'}, "
                                f"ResourceSlices {len(slices)}")


# -- robust_controller -------------------------------------------------------------------------
@check("aiconf.robust_controller", "Kubeflow Trainer: TrainJob CRD established, invalid refused, valid completes",
       fix="install Kubeflow Trainer with its webhook and default runtimes (kubeflow_trainer.runtime), or set "
           "ai_conformance.kubeflow_trainer.installed: false")
@pytest.mark.parametrize("trainer_item", ["crd_established", "invalid_refused", "valid_completes"])
def test_robust_controller(cluster, cluster_expected, ai_expected, trainer_item, workloads):
    """robust_controller (mirrors kubernetes-sigs/ai-conformance TestRobustCRDControllerOperation): the
    TrainJob CRD is Established, the Trainer's admission webhook refuses a TrainJob naming a runtime
    that does not exist (server-side dry run), and one naming kubeflow_trainer.runtime Completes."""
    if not ai_expected.kubeflow_trainer.installed:
        pytest.skip("the profile says the platform has no Kubeflow Trainer (ai_conformance.kubeflow_trainer.installed)")
    if trainer_item == "crd_established":
        problem = aiconf.crd_established(cluster.cluster, aiconf.TRAINJOB_CRD)
        assert problem is None, problem
        return
    trainer, labels = ai_expected.kubeflow_trainer, workloads.ns.labels
    namespace = trainer.namespace or workloads.ns.name
    if trainer_item == "invalid_refused":
        invalid = aiconf.trainjob(namespace, "gpuconform-invalid", "gpuconform-no-such-runtime", labels)
        refusal = aiconf.create_refusal(cluster.cluster, invalid)
        assert refusal and "admission webhook" in refusal, (
            f"a TrainJob naming no existing runtime was {'refused, not by a webhook: ' + refusal if refusal else 'accepted'}")
    else:
        valid = aiconf.trainjob(namespace, "gpuconform-valid", trainer.runtime, labels)
        outcome = aiconf.run_trainjob(cluster.cluster, valid, cluster_expected.timeouts.pod_run_s)
        assert outcome == "Complete", f"TrainJob on ClusterTrainingRuntime {trainer.runtime}: {outcome}"
