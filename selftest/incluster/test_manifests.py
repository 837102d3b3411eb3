"""manifests/in-cluster's base as objects: the API server of the cluster bed accepts every one of
them (server-side dry run, admission included), the runner pod is admitted under the
namespace's Pod Security "restricted", the base holds no Job, no profile and no Secret (a
re-apply overwrites none), the profile the README makes the ConfigMap from is one the suite
loads and has a node section, the Secret the README makes reaches the variable the profile
names, and the image recipe copies what exists. (test_apply.py applies the base with kubectl.)"""
from __future__ import annotations

import shlex

import yaml

import incluster_harness as h
from gpuconform.profile import load as load_profile

OBJECTS = [d for p in h.base_files() for d in h.documents(p)]
#: what the README creates the profile ConfigMap from (README.md: kubectl create configmap)
README_PROFILE = h.REPO / "profiles" / "seed-h100.yaml"


def _kind(kind: str) -> dict:
    return next(d for d in OBJECTS if d["kind"] == kind)


def test_the_base_holds_no_job_no_profile_and_no_secret():
    """Applied (and applied again), the base starts no run and overwrites no profile or password;
    every file of the folder's objects is in it, so none is left to a plain apply -f."""
    assert {d["kind"] for d in OBJECTS}.isdisjoint({"Job", "ConfigMap", "Secret"})
    assert h.run_spec()["backoffLimit"] == 0
    assert sorted(h.IN_CLUSTER.glob("[0-9]*.yaml")) == sorted(h.base_files())


def test_every_object_is_accepted_and_the_runner_pod_is_restricted(admin, installed):
    for obj in OBJECTS:
        if obj["kind"] in ("Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                           "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"):
            continue  # applied for real by the ``installed`` fixture
        h.dry_run_create(admin, obj)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpuconform-now-x", "namespace": h.NAMESPACE},
           "spec": h.run_spec()["template"]["spec"]}
    h.dry_run_create(admin, pod)  # refused by Pod Security "restricted" if it were not compliant
    privileged = {**pod, "spec": {**pod["spec"], "securityContext": {}}}
    try:
        h.dry_run_create(admin, privileged)
    except Exception as exc:  # noqa: BLE001 - the refusal is what is asserted
        assert "violates PodSecurity" in str(exc) and "restricted" in str(exc), exc
    else:
        raise AssertionError("the namespace admitted a pod without runAsNonRoot/seccomp")


def test_the_readmes_profile_has_a_node_section_and_lands_where_the_run_reads_it():
    """The node checks probe every GPU node: the profile they are judged against says what a
    node must be (without `node:` every node check would skip after probing each node)."""
    readme = (h.IN_CLUSTER / "README.md").read_text()
    assert f"--from-file=profile.yaml={README_PROFILE.relative_to(h.REPO)}" in readme
    assert load_profile(README_PROFILE).profile.node is not None
    spec = h.run_spec()["template"]["spec"]
    container = spec["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounted = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert env["GPUCONFORM_PROFILE"] == f"{mounted['profile']}/profile.yaml"
    volume = next(v for v in spec["volumes"] if v["name"] == "profile")
    assert volume["configMap"] == {"name": "gpuconform-profile"}
    assert "create configmap gpuconform-profile" in readme


def test_the_readmes_secret_reaches_the_variable_the_profile_names():
    readme = (h.IN_CLUSTER / "README.md").read_text()
    assert "create secret generic gpuconform-kubeflow --from-literal=password=" in readme
    env = next(e for e in h.run_spec()["template"]["spec"]["containers"][0]["env"]
               if e["name"] == "GPUCONFORM_KUBEFLOW_PASSWORD")
    assert env["valueFrom"]["secretKeyRef"] == {"name": "gpuconform-kubeflow", "key": "password", "optional": True}
    seed = yaml.safe_load(README_PROFILE.read_text())
    assert seed["kubeflow"]["account"]["password_env"] == "GPUCONFORM_KUBEFLOW_PASSWORD"


def test_containerfile_copies_what_exists_and_installs_not_editable():
    text = (h.IN_CLUSTER / "Containerfile").read_text()
    for line in text.splitlines():
        if line.startswith("COPY "):
            for src in shlex.split(line)[1:-1]:
                assert (h.REPO / src).exists(), f"Containerfile copies {src}, which does not exist"
        if line.startswith("RUN "):
            assert "pip install" in line and " -e " not in line and "--editable" not in line
