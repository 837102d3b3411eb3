"""NVIDIA's device plugin and GPU Feature Discovery installed without the GPU Operator, as many
managed and hand-built clusters run them: the ``nvidia-device-plugin`` Helm chart of
NVIDIA/k8s-device-plugin (deployments/helm/nvidia-device-plugin) rendered by a real Helm with
the site's values and applied. Its pods' node side is played by ``testbed/cluster/nodeagent.py``
like the operator's operands."""
from __future__ import annotations

import subprocess
import tempfile

import yaml
from kubernetes import client

from testbed import kube
from testbed.deviceplugin import binaries
from testbed.gpuoperator import binaries as helm_binaries
from testbed.gpuoperator.operator import OperatorError, apply, merge_values

NAMESPACE = "nvidia-device-plugin"
RELEASE = "nvdp"
#: The values a site sets for a device plugin with GFD and no NFD of the chart's own (the bed
#: labels the nodes as NFD would); the chart's defaults otherwise (values.yaml).
BASE_VALUES: dict = {"gfd": {"enabled": True}, "nfd": {"enabled": False}}


def render(values: dict, *, namespace: str = NAMESPACE, kube_version: str = "v1.35.8") -> list[dict]:
    """``helm template`` of the chart with ``values`` over :data:`BASE_VALUES`."""
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", prefix="nvdp-values-") as f:
        yaml.safe_dump(merge_values(BASE_VALUES, values), f)
        f.flush()
        result = subprocess.run(
            [str(helm_binaries.bin_dir() / "helm"), "template", RELEASE, str(binaries.chart_dir()),
             "--namespace", namespace, "--no-hooks", "--kube-version", kube_version, "--values", f.name],
            capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise OperatorError(f"helm template failed (rc={result.returncode}): {result.stderr.strip()[-2000:]}")
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def install(api: client.ApiClient, values: dict, *, namespace: str = NAMESPACE) -> list[dict]:
    """The release namespace (privileged: the plugin mounts host paths) and the chart's objects."""
    kube.create_or_update(client.CoreV1Api(api).create_namespace, client.CoreV1Api(api).patch_namespace, {
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": namespace, "labels": {"pod-security.kubernetes.io/enforce": "privileged"}}})
    objects = render(values, namespace=namespace)
    apply(api, objects, namespace=namespace)
    return objects
