"""The AI Conformance checks (-m aiconformance, tests/cluster/test_aiconformance.py) on the
simulated cluster: on the good platform every decided requirement passes and the undecided ones
carry the profile's status; on a platform carrying the faults each check fails naming its cause:
a pod that sees a GPU it did not request (the runtime's NVIDIA_VISIBLE_DEVICES leak), a driver
upgraded without reload (the injected nvidia-smi: "Driver/library version mismatch"), a metrics
endpoint without per-device labels, a DRA driver whose kubelet plugin does not run (its DeviceClass
and no ResourceSlice), a Kubeflow Trainer whose controller stopped (its admission webhook no longer
answers).

Kubeflow Trainer and JobSet (testbed/trainer: the real controllers) are installed for this
module's runs only, not at every bed start: they add ~20 s to it and two more controllers
watching the bed on a small machine, for a check no other selftest runs."""
from __future__ import annotations

import pytest

from gpuconform.aiconformance import mapping
from testbed.trainer.trainer import TRAINER, TRAINJOB_NAMESPACE

#: the checklist these runs are judged by (dra_support is a MUST of 1.35, gone in 1.36)
CHECKLIST = "1.35"
PASS_ON_GOOD = {("aiconf.secure_accelerator_access", p) for p in ("asked-one", "asked-none", "pair-asked-one",
                                                                  "pair-asked-none")} | {
    ("aiconf.driver_runtime_management", "driver"), ("aiconf.driver_runtime_management", "cuda"),
    ("aiconf.accelerator_metrics", "utilization"), ("aiconf.accelerator_metrics", "memory"),
    ("aiconf.gpu_sharing", "advertised"), ("aiconf.gpu_sharing", "usable"), ("aiconf.dra_support", "api"),
    ("aiconf.dra_support", "driver")} | {
    ("aiconf.robust_controller", item) for item in ("crd_established", "invalid_refused", "valid_completes")}
#: the profile's Kubeflow Trainer: the bed's, its TrainJobs in the namespace it gives them
TRAINER_DECLARED = {"installed": True, "namespace": TRAINJOB_NAMESPACE}


@pytest.fixture(scope="module")
def trainer(platform):
    """Kubeflow Trainer and JobSet on the bed for this module's runs, removed afterwards."""
    from testbed.trainer.trainer import Trainer
    installed = Trainer(platform.control_plane, platform.api).install()
    yield installed
    installed.uninstall()


@pytest.fixture
def trainer_stopped(trainer):
    """The Trainer's controller process stopped, as a crashed or scaled-down controller pod
    leaves a platform: CRDs and webhook configurations in place, nobody answering; started again
    afterwards."""
    trainer.stop(TRAINER)
    yield
    trainer.start(TRAINER)


def run_aiconf(run_cluster, profile_with, *args: str, **section):
    """The AI Conformance checks; the metrics endpoint is the profile's default (the GPU Operator's
    nvidia-dcgm-exporter Service through the API server's service proxy) unless ``section`` names one."""
    profile = profile_with({"ai_conformance": {"checklist": CHECKLIST, **section}})
    return run_cluster("-m", "aiconformance", *args, profile=profile)


def test_good_platform_passes(run_cluster, profile_with, exporter, dra_driver, trainer):
    assert len(exporter()) == 3 and len(dra_driver()) == 3  # one per GPU worker
    proc, results = run_aiconf(run_cluster, profile_with, dra_driver="gpu.nvidia.com", kubeflow_trainer=TRAINER_DECLARED)
    aiconf = {cid for cid, _ in results if cid.startswith(mapping.PREFIX)}
    assert aiconf == {"aiconf.secure_accelerator_access", "aiconf.driver_runtime_management", "aiconf.accelerator_metrics",
                      "aiconf.gpu_sharing", "aiconf.dra_support", "aiconf.robust_controller"}
    # besides them only the suite's checks that decide a requirement (gpuconform/aiconformance/mapping.py)
    assert {cid for cid, _ in results} - aiconf <= {c for checks in mapping.SUITE_CHECKS.values() for c in checks}
    passed = {k for k, r in results.items() if r["verdict"] == "pass" and k[0].startswith(mapping.PREFIX)}
    assert passed == PASS_ON_GOOD, {k: (r["verdict"], r["message"]) for k, r in results.items() if k not in passed}
    assert proc.returncode == 0, proc.stdout[-3000:]
    # the versions a GPU pod sees are judged against the DRA driver's ResourceSlice attributes
    for kind, attribute in (("driver", "driverVersion"), ("cuda", "cudaDriverVersion")):
        evidence = results[("aiconf.driver_runtime_management", kind)]["evidence"]
        assert f"advertised ---\nResourceSlice gpu-worker-" in evidence and f" {attribute}: " in evidence, evidence


def test_faulty_platform_fails_each_requirement(platform, fault, run_cluster, profile_with, exporter, dra_driver,
                                                trainer_stopped):
    from kubernetes import client

    from testbed.cluster.devices import SCENARIO_CONFIGMAP
    ns, name = SCENARIO_CONFIGMAP
    client.CoreV1Api(platform.api).create_namespaced_config_map(  # reset by `fault`
        ns, {"metadata": {"name": name}, "data": {"isolation": "leak"}})
    fault("driver-library-mismatch")
    exporter(per_device=False)
    dra_driver(kubelet_plugin_running=False)
    _, results = run_aiconf(run_cluster, profile_with, "-k", "not gpu_sharing",
                            dra_driver="gpu.nvidia.com", kubeflow_trainer=TRAINER_DECLARED)
    expected = {
        ("aiconf.secure_accelerator_access", "asked-one"): ("pass", ""),
        ("aiconf.secure_accelerator_access", "pair-asked-one"): ("pass", ""),
        ("aiconf.secure_accelerator_access", "asked-none"): ("fail", "container probe of pod gpu-isolation-probe on gpu-worker-1 sees 8 GPU(s)"),
        ("aiconf.secure_accelerator_access", "pair-asked-none"): ("fail", "container without-gpu of pod gpu-access-pair"),
        ("aiconf.driver_runtime_management", "driver"): ("fail", "Driver/library version mismatch"),
        ("aiconf.driver_runtime_management", "cuda"): ("fail", "advertised by node label nvidia.com/cuda.runtime-version.full"),
        ("aiconf.accelerator_metrics", "utilization"): ("fail", "DCGM_FI_DEV_GPU_UTIL samples carry none of the device labels"),
        ("aiconf.accelerator_metrics", "memory"): ("fail", "DCGM_FI_DEV_FB_USED samples carry none of the device labels"),
        ("aiconf.dra_support", "api"): ("pass", ""),
        ("aiconf.dra_support", "driver"): ("fail", "DRA driver gpu.nvidia.com: DeviceClasses selecting it "
                                                   "['gpu.nvidia.com'], ResourceSlices 0"),
        ("aiconf.robust_controller", "crd_established"): ("pass", ""),
        # the API server refuses: its call to the Trainer's webhook finds nobody listening
        ("aiconf.robust_controller", "invalid_refused"): ("fail", "connect: connection refused"),
        ("aiconf.robust_controller", "valid_completes"): ("fail", "TrainJob on ClusterTrainingRuntime torch-distributed: refused"),
    }
    got = {k: (results[k]["verdict"], results[k]["message"]) for k in expected if k in results}
    for key, (verdict, text) in expected.items():
        assert key in got and got[key][0] == verdict and text in got[key][1], (key, got.get(key))
    others = {k: r["verdict"] for k, r in results.items() if k not in expected and k[0].startswith(mapping.PREFIX)}
    assert set(others.values()) <= {"skip"}, others
    # the suite's own check of the same rule, mapped to the requirement, sees the leak too
    assert results[("cluster.workload.isolation", None)]["verdict"] == "fail"


def test_requirement_not_in_the_profiles_checklist_skips(run_cluster, profile_with):
    _, results = run_aiconf(run_cluster, profile_with, "-k", "dra_support", checklist="1.36")
    for param in ("api", "driver"):
        r = results[("aiconf.dra_support", param)]
        assert r["verdict"] == "skip" and "not a requirement of checklist 1.36" in r["message"], r


def test_no_dra_driver_named_skips_saying_so(run_cluster, profile_with):
    _, results = run_aiconf(run_cluster, profile_with, "-k", "dra_support")
    assert results[("aiconf.dra_support", "api")]["verdict"] == "pass"
    r = results[("aiconf.dra_support", "driver")]
    assert r["verdict"] == "skip" and "names no DRA driver" in r["message"], r



@pytest.mark.parametrize("endpoint", ["service", "url", "exporter-down"])
def test_metrics_endpoint_paths(run_cluster, profile_with, exporter, endpoint):
    """The profile's endpoint, reached through the Service or by URL; an exporter whose pods run
    but whose process answers nothing fails saying what the API server's proxy answered."""
    urls = exporter(answering=endpoint != "exporter-down")
    metrics = {"url": next(iter(urls.values()))} if endpoint == "url" else {}
    _, results = run_aiconf(run_cluster, profile_with, "-k", "accelerator_metrics", metrics=metrics)
    for kind in ("utilization", "memory"):
        r = results[("aiconf.accelerator_metrics", kind)]
        if endpoint == "exporter-down":
            assert r["verdict"] == "fail" and r["message"].startswith(
                "/api/v1/namespaces/gpu-operator/services/nvidia-dcgm-exporter:9400/proxy/metrics: ") and (
                "HTTP 503" in r["message"]), r["message"]
        else:
            assert r["verdict"] == "pass", r["message"]
