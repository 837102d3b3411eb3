"""The Kubeflow 1.10 install is up: its workloads are available and its cert-manager issuer is Ready."""
from gpuconform.checks import check
from gpuconform.kubeflow import objects

FIX_COMPONENT = ("kubectl -n <namespace> describe deployment/<name> (or statefulset) and its pods' events; "
                 "re-apply the kubeflow/manifests component (kustomize build ... | kubectl apply -f -)")


@check("kubeflow.components.available", "The Kubeflow workload is available", fix=FIX_COMPONENT)
def test_component_available(cluster, kubeflow_expected, component, kf_evidence):
    """The Deployment (or StatefulSet) named in kubeflow.components has all its replicas available."""
    namespace, spec = component.split("/", 1)
    label, obj = objects.workload(cluster.cluster, namespace, spec)
    if obj is not None:
        kf_evidence.add(f"{label} in {namespace}", str(obj.get("status", {})))
    why = objects.unavailable_reason(obj, label, namespace)
    assert why is None, f"{why}, expected all replicas available"


@check("kubeflow.certmanager.issuer_ready", "The Kubeflow cert-manager issuer is Ready",
       fix="kubectl describe clusterissuer kubeflow-self-signing-issuer; check cert-manager's logs "
           "(kubectl -n cert-manager logs deploy/cert-manager)")
def test_issuer_ready(cluster, kubeflow_expected, kf_evidence):
    """The cert-manager issuer in kubeflow.issuer exists and its Ready condition is True."""
    want = kubeflow_expected.issuer
    obj = objects.issuer(cluster.cluster, want.kind, want.name, want.namespace)
    assert obj is not None, f"{want.kind} {want.name} not found, expected it Ready"
    ready = objects.condition(obj, "Ready")
    kf_evidence.add(f"{want.kind} {want.name}", str(obj.get("status", {})))
    assert ready and ready.get("status") == "True", (
        f"{want.kind} {want.name} Ready={ready.get('status') if ready else 'absent'}"
        f"{' (' + ready.get('message', '') + ')' if ready and ready.get('message') else ''}, expected True")

