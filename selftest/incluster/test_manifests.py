"""manifests/in-cluster as objects: the API server of the cluster bed accepts every one of
them (server-side dry run, admission included), the runner pod is admitted under the
namespace's Pod Security "restricted", the Job runs what the CronJob runs, the profile in the
ConfigMap is one the suite loads, the Secret is a template with no value, and the image recipe
copies what exists."""
from __future__ import annotations

import shlex

import yaml

import incluster_harness as h
from gpuconform.profile import load as load_profile

MANIFESTS = sorted(h.IN_CLUSTER.glob("*.yaml"))


def _kind(kind: str) -> dict:
    return next(d for p in MANIFESTS for d in h.documents(p) if d["kind"] == kind)


def test_job_runs_what_the_cronjob_runs():
    assert _kind("Job")["spec"]["template"] == _kind("CronJob")["spec"]["jobTemplate"]["spec"]["template"]
    assert _kind("Job")["spec"]["backoffLimit"] == _kind("CronJob")["spec"]["jobTemplate"]["spec"]["backoffLimit"] == 0


def test_every_object_is_accepted_and_the_runner_pod_is_restricted(admin, installed):
    for path in MANIFESTS:
        for obj in h.documents(path):
            if obj["kind"] in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                               "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
                continue  # applied for real by the ``installed`` fixture
            h.dry_run_create(admin, obj)
    job = _kind("Job")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpuconform-run-x", "namespace": h.NAMESPACE},
           "spec": job["spec"]["template"]["spec"]}
    h.dry_run_create(admin, pod)  # refused by Pod Security "restricted" if it were not compliant
    privileged = {**pod, "spec": {**pod["spec"], "securityContext": {}}}
    try:
        h.dry_run_create(admin, privileged)
    except Exception as exc:  # noqa: BLE001 - the refusal is what is asserted
        assert "violates PodSecurity" in str(exc) and "restricted" in str(exc), exc
    else:
        raise AssertionError("the namespace admitted a pod without runAsNonRoot/seccomp")


def test_profile_configmap_is_a_profile_the_suite_loads(tmp_path):
    cm = _kind("ConfigMap")
    path = tmp_path / "profile.yaml"
    path.write_text(cm["data"]["profile.yaml"])
    assert load_profile(path).name == "nightly"
    mount = _kind("Job")["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e.get("value") for e in mount["env"]}
    mounted = {m["name"]: m["mountPath"] for m in mount["volumeMounts"]}
    assert env["GPUCONFORM_PROFILE"] == f"{mounted['profile']}/profile.yaml"


def test_kubeflow_secret_is_a_template_and_reaches_the_variable_the_profile_names():
    secret = _kind("Secret")
    assert secret["stringData"] == {"password": ""}
    env = next(e for e in _kind("Job")["spec"]["template"]["spec"]["containers"][0]["env"]
               if e["name"] == "GPUCONFORM_KUBEFLOW_PASSWORD")
    assert env["valueFrom"]["secretKeyRef"] == {"name": secret["metadata"]["name"], "key": "password", "optional": True}
    seed = yaml.safe_load((h.REPO / "profiles" / "seed-h100.yaml").read_text())
    assert seed["kubeflow"]["account"]["password_env"] == "GPUCONFORM_KUBEFLOW_PASSWORD"


def test_containerfile_copies_what_exists_and_installs_not_editable():
    text = (h.IN_CLUSTER / "Containerfile").read_text()
    for line in text.splitlines():
        if line.startswith("COPY "):
            for src in shlex.split(line)[1:-1]:
                assert (h.REPO / src).exists(), f"Containerfile copies {src}, which does not exist"
        if line.startswith("RUN "):
            assert "pip install" in line and " -e " not in line and "--editable" not in line
