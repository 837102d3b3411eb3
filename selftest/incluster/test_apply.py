"""manifests/in-cluster applied as a user does, with a real kubectl (built from k8s.io/kubernetes at
the bed's version: testbed/cluster/build-kubectl.sh) and its built-in kustomize, to the cluster
bed, twice: through an overlay of the user's own that sets the image and the reports' StorageClass
(README.md), as the bed's admin. Applied, it makes no Job, and the CronJob runs the overlay's
image; the profile ConfigMap and the Kubeflow Secret, made and changed the way the README says,
are left as they are by the second apply, which changes nothing at all; the reports claim names
the overlay's StorageClass; `kubectl create job --from=cronjob/...` makes a run.

The namespace, ServiceAccount, RBAC and admission policy are the ``installed`` fixture's (the
other in-cluster selftests share them): applied over them here, deleted by it; what only this
module makes (CronJob, claim, ConfigMap, Secret, Job) it deletes."""
from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest
import yaml

import incluster_harness as h
from testbed.cluster.binaries import kubectl as built_kubectl

IMAGE = "registry.example.com/platform/gpuconform:0.1.0"
STORAGE_CLASS = "local-path"
CRONJOB = "gpuconform-nightly"
PROFILE = h.REPO / "profiles" / "seed-h100.yaml"
PASSWORD = "kf-test-password-1"


def overlay(folder) -> str:
    """The user's overlay of README.md: the base by a relative path, the image, the StorageClass."""
    folder.mkdir()
    (folder / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(h.IN_CLUSTER, folder)],
        "images": [{"name": "gpuconform", "newName": IMAGE.rsplit(":", 1)[0], "newTag": IMAGE.rsplit(":", 1)[1]}],
        "patches": [{"target": {"kind": "PersistentVolumeClaim", "name": "gpuconform-reports"},
                     "patch": f"- {{op: replace, path: /spec/storageClassName, value: {STORAGE_CLASS}}}\n"}]}))
    return str(folder)


class Kubectl:
    def __init__(self, binary, kubeconfig):
        self.argv = [str(binary), f"--kubeconfig={kubeconfig}"]

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        proc = subprocess.run([*self.argv, *args], input=stdin, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: rc={proc.returncode}\n{proc.stdout}{proc.stderr}"
        return proc.stdout

    def get(self, *args: str) -> dict:
        return json.loads(self("-n", h.NAMESPACE, "get", *args, "-o", "json"))

    def readme_create_or_change(self, kind: str, *args: str) -> None:
        """README.md's way to make the profile ConfigMap or the Secret, and to change it later."""
        made = self("-n", h.NAMESPACE, "create", kind, *args, "--dry-run=client", "-o", "yaml")
        self("apply", "-f", "-", stdin=made)


@pytest.fixture(scope="module")
def kubectl(platform, installed):
    k = Kubectl(built_kubectl(), platform.kubeconfig)
    yield k
    k("-n", h.NAMESPACE, "delete", "--ignore-not-found", "--wait=false", f"cronjob/{CRONJOB}", "job/gpuconform-now",
      "configmap/gpuconform-profile", "secret/gpuconform-kubeflow", "pvc/gpuconform-reports")


@pytest.fixture(scope="module")
def site(kubectl, tmp_path_factory) -> str:
    """The overlay, applied once (before any profile or Secret exists)."""
    folder = overlay(tmp_path_factory.mktemp("site") / "gpuconform")
    kubectl("apply", "-k", folder)
    return folder


def test_applying_makes_no_job_and_the_cronjob_runs_the_overlays_image(kubectl, site):
    assert kubectl.get("jobs")["items"] == []
    spec = kubectl.get(f"cronjob/{CRONJOB}")["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert [c["image"] for c in spec["containers"]] == [IMAGE]


def test_the_reports_claim_names_the_overlays_storage_class(kubectl, site):
    assert kubectl.get("pvc/gpuconform-reports")["spec"]["storageClassName"] == STORAGE_CLASS


def test_applying_again_keeps_the_profile_and_secret_and_changes_nothing(kubectl, site, tmp_path):
    kubectl.readme_create_or_change("configmap", "gpuconform-profile", f"--from-file=profile.yaml={PROFILE}")
    kubectl.readme_create_or_change("secret", "generic", "gpuconform-kubeflow", "--from-literal=password=")
    changed = tmp_path / "profile.yaml"
    changed.write_text(PROFILE.read_text().replace("name: seed-h100", "name: site-nightly", 1))
    kubectl.readme_create_or_change("configmap", "gpuconform-profile", f"--from-file=profile.yaml={changed}")
    kubectl.readme_create_or_change("secret", "generic", "gpuconform-kubeflow", f"--from-literal=password={PASSWORD}")

    out = kubectl("apply", "-k", site)

    assert out.strip() and all(line.endswith(" unchanged") for line in out.strip().splitlines()), out
    assert kubectl.get("configmap/gpuconform-profile")["data"] == {"profile.yaml": changed.read_text()}
    secret = kubectl.get("secret/gpuconform-kubeflow")["data"]
    assert secret == {"password": base64.b64encode(PASSWORD.encode()).decode()}
    assert kubectl.get("jobs")["items"] == []


def test_a_run_now_is_a_job_made_from_the_cronjob(kubectl, site):
    kubectl("-n", h.NAMESPACE, "create", "job", f"--from=cronjob/{CRONJOB}", "gpuconform-now")
    jobs = kubectl.get("jobs")["items"]
    assert [j["metadata"]["name"] for j in jobs] == ["gpuconform-now"]
    assert jobs[0]["spec"]["template"]["spec"]["containers"][0]["image"] == IMAGE
    assert jobs[0]["spec"]["backoffLimit"] == 0
