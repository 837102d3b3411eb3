"""What the in-cluster selftests share: the manifests of manifests/in-cluster applied as a user
would (kubectl apply: create, else replace), a token of the suite's ServiceAccount from the
TokenRequest API, a kubeconfig holding only that token, the RBAC rules with the checks their
comments name, an access review to wait until RBAC has taken a change in, and what a run of the
CronJob (60-cronjob.yaml) runs with."""
from __future__ import annotations

import contextlib
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
IN_CLUSTER = REPO / "manifests" / "in-cluster"
RBAC = IN_CLUSTER / "10-rbac.yaml"
FENCE = IN_CLUSTER / "11-admission-policy.yaml"
CRONJOB = IN_CLUSTER / "60-cronjob.yaml"
NAMESPACE, SERVICE_ACCOUNT = "gpuconform", "gpuconform"
USER = f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}"
sys.path.insert(0, str(REPO / "selftest" / "cluster_checks"))

#: REST path of each kind the manifests hold: (prefix, namespaced, plural)
KINDS = {
    "Namespace": ("/api/v1", False, "namespaces"),
    "ServiceAccount": ("/api/v1", True, "serviceaccounts"),
    "ConfigMap": ("/api/v1", True, "configmaps"),
    "Secret": ("/api/v1", True, "secrets"),
    "ClusterRole": ("/apis/rbac.authorization.k8s.io/v1", False, "clusterroles"),
    "ClusterRoleBinding": ("/apis/rbac.authorization.k8s.io/v1", False, "clusterrolebindings"),
    "Role": ("/apis/rbac.authorization.k8s.io/v1", True, "roles"),
    "RoleBinding": ("/apis/rbac.authorization.k8s.io/v1", True, "rolebindings"),
    "ValidatingAdmissionPolicy": ("/apis/admissionregistration.k8s.io/v1", False, "validatingadmissionpolicies"),
    "ValidatingAdmissionPolicyBinding": ("/apis/admissionregistration.k8s.io/v1", False,
                                         "validatingadmissionpolicybindings"),
    "PersistentVolumeClaim": ("/api/v1", True, "persistentvolumeclaims"),
    "Pod": ("/api/v1", True, "pods"),
    "Job": ("/apis/batch/v1", True, "jobs"),
    "CronJob": ("/apis/batch/v1", True, "cronjobs"),
}


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def base_files() -> list[Path]:
    """The files of the kustomize base (kustomization.yaml's resources), in its order."""
    kustomization = yaml.safe_load((IN_CLUSTER / "kustomization.yaml").read_text())
    return [IN_CLUSTER / name for name in kustomization["resources"]]


def run_spec() -> dict:
    """The spec of each Job the CronJob makes (and of kubectl create job --from=cronjob/...)."""
    return yaml.safe_load(CRONJOB.read_text())["spec"]["jobTemplate"]["spec"]


def _path(obj: dict, *, named: bool) -> str:
    prefix, namespaced, plural = KINDS[obj["kind"]]
    md = obj["metadata"]
    where = f"{prefix}/namespaces/{md['namespace']}/{plural}" if namespaced else f"{prefix}/{plural}"
    return f"{where}/{md['name']}" if named else where


def apply(cluster, obj: dict) -> None:
    """Create ``obj``, or replace it when it exists (as kubectl apply ends up doing)."""
    current = cluster.get_json(_path(obj, named=True), missing_ok=True)
    if current is None:
        cluster.request("POST", _path(obj, named=False), body=obj)
    elif obj["kind"] != "Namespace":
        body = {**obj, "metadata": {**obj["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]}}
        cluster.request("PUT", _path(obj, named=True), body=body)


def dry_run_create(cluster, obj: dict) -> dict:
    """What the API server (validation, admission: Pod Security included) says to creating
    ``obj``, nothing stored (dryRun=All)."""
    return cluster.request("POST", _path(obj, named=False), {"dryRun": "All"}, body=obj)


def delete(cluster, obj: dict) -> None:
    cluster.request("DELETE", _path(obj, named=True), missing_ok=True)


def token(cluster, seconds: int = 3600) -> str:
    """A token of the suite's ServiceAccount (TokenRequest, as the kubelet gets one for a pod)."""
    doc = cluster.request("POST", f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts/{SERVICE_ACCOUNT}/token",
                          body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                                "spec": {"expirationSeconds": seconds}})
    return doc["status"]["token"]


def ca_file(admin_kubeconfig: Path) -> Path:
    return Path(yaml.safe_load(admin_kubeconfig.read_text())["clusters"][0]["cluster"]["certificate-authority"])


def token_kubeconfig(path: Path, server: str, ca: Path, bearer: str) -> Path:
    """A kubeconfig with the ServiceAccount's token and the cluster's CA, nothing of the admin."""
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "sa",
        "clusters": [{"name": "bed", "cluster": {"server": server, "certificate-authority": str(ca)}}],
        "users": [{"name": USER, "user": {"token": bearer}}],
        "contexts": [{"name": "sa", "context": {"cluster": "bed", "user": USER}}]}))
    return path


def allowed(cluster, verb: str, resource: str, group: str = "", namespace: str | None = None,
            name: str | None = None) -> bool:
    """What RBAC answers for the ServiceAccount now (SubjectAccessReview, asked as the admin)."""
    resource, _, sub = resource.partition("/")
    attrs = {"verb": verb, "resource": resource, "subresource": sub, "group": group,
             **({"namespace": namespace} if namespace else {}), **({"name": name} if name else {})}
    doc = cluster.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body={
        "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": USER, "groups": ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}",
                                          "system:authenticated"], "resourceAttributes": attrs}})
    return bool(doc["status"].get("allowed"))


def wait_access(cluster, want: bool, verb: str, resource: str, group: str = "", namespace: str | None = None,
                timeout: float = 30, name: str | None = None) -> None:
    deadline = time.monotonic() + timeout
    while allowed(cluster, verb, resource, group, namespace, name) != want:
        assert time.monotonic() < deadline, f"RBAC still {'denies' if want else 'allows'} {verb} {resource}"
        time.sleep(0.2)


@dataclass(frozen=True)
class Rule:
    """One rule of a role in 10-rbac.yaml (or an optional file) and the checks its comment names."""
    role_kind: str
    role_name: str
    index: int
    rule: dict
    checks: tuple[str, ...]

    @property
    def label(self) -> str:
        group = self.rule["apiGroups"][0]
        resources = "+".join(r + (f".{group}" if group else "") for r in self.rule["resources"])
        return f"{self.role_name}:{resources}:{'+'.join(self.rule['verbs'])}"

    @property
    def node_checks(self) -> tuple[str, ...]:
        """The node checks it names (those run through k8s-node:// probe pods)."""
        return tuple(c for c in self.checks if c.startswith("node."))


#: the check ids of tests/ (named in @check or in a module constant it takes)
CHECK_IDS = set(re.findall(r'"((?:cluster|kubeflow)\.[a-z_]+(?:\.[a-z_]+)+|(?:node|aiconf)\.[a-z_]+(?:\.[a-z_]+)*)"', "".join(
    p.read_text() for p in (REPO / "tests").rglob("*.py")))) | {"cluster.api.reachable"}
CHECK_ID = re.compile(r"\b(?:cluster|kubeflow|node|aiconf)\.[a-z_]+(?:\.[a-z_]+)*")


def rules(path: Path = RBAC) -> list[Rule]:
    """The rules of every Role/ClusterRole in ``path``, each with the check ids named in the
    comment lines right above it (``.x`` continues the previous id's prefix: ``.pod_limits``)."""
    out: list[Rule] = []
    for text in path.read_text().split("\n---\n"):
        doc = yaml.safe_load(text)
        if not doc or doc["kind"] not in ("Role", "ClusterRole"):
            continue
        comments: list[str] = []
        index = 0
        for line in text.splitlines():
            stripped = line.strip()
            if stripped.startswith("#"):
                comments.append(stripped.lstrip("# "))
            elif stripped.startswith("- apiGroups:"):
                out.append(Rule(doc["kind"], doc["metadata"]["name"], index, doc["rules"][index],
                                _check_ids(" ".join(comments))))
                index += 1
                comments = []
            elif stripped and not stripped.startswith(("resources:", "verbs:", "resourceNames:")):
                comments = []
    return out


def _check_ids(text: str) -> tuple[str, ...]:
    ids, last = [], ""
    for word in re.findall(r"[a-z_]*\.?[a-z_.]+", text.replace(",", " ")):
        m = CHECK_ID.fullmatch(word.rstrip("."))
        if m:
            ids.append(last := m.group(0))
        elif word.startswith(".") and last and re.fullmatch(r"\.[a-z_]+", word.rstrip(".")):
            ids.append(last.rsplit(".", 1)[0] + word.rstrip("."))
    return tuple(dict.fromkeys(ids))


@contextlib.contextmanager
def rule_removed(cluster, role: dict, rule: Rule, needs: str, namespace: str | None):
    """``role`` applied without ``rule`` until the block ends (then put back), waiting both
    times until RBAC answers accordingly for ``needs`` (``<verb> <resource>[.<group>]``)."""
    verb, resource = needs.split(" ")[:2]
    group = rule.rule["apiGroups"][0]
    resource = resource.removesuffix(f".{group}") if group else resource
    name = next(iter(rule.rule.get("resourceNames") or []), None)  # a rule for one object: asked for it
    apply(cluster, {**role, "rules": [r for i, r in enumerate(role["rules"]) if i != rule.index]})
    try:
        wait_access(cluster, False, verb, resource, group, namespace, name=name)
        yield
    finally:
        apply(cluster, role)
        wait_access(cluster, True, verb, resource, group, namespace, name=name)


def wait_fence(sa_cluster, timeout: float = 30) -> None:
    """Until 11-admission-policy.yaml is in force (the API server compiles a new policy in the
    background): a pod of the ServiceAccount in ``default`` is refused (dry run)."""
    from gpuconform.cluster.errors import Forbidden
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "fence-probe", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    deadline = time.monotonic() + timeout
    while True:
        try:
            sa_cluster.request("POST", "/api/v1/namespaces/default/pods", {"dryRun": "All"}, body=pod)
        except Forbidden as exc:
            if "gpuconform may write only" in str(exc):
                return
        assert time.monotonic() < deadline, "the admission policy is not in force"
        time.sleep(0.3)


def job_env() -> dict[str, str]:
    """The literal environment of a run's container (60-cronjob.yaml), as a pod of it gets it."""
    container = run_spec()["template"]["spec"]["containers"][0]
    return {var["name"]: var["value"] for var in container["env"] if "value" in var}


def job_default_hosts() -> str:
    """The node checks' hosts a run uses unless changed: its GPUCONFORM_HOSTS."""
    return job_env()["GPUCONFORM_HOSTS"]


def managed_namespaces(cluster) -> set[str]:
    """The namespaces labelled as the suite's (run and probe namespaces, not yet gone)."""
    doc = cluster.get_json("/api/v1/namespaces", {"labelSelector": "app.kubernetes.io/managed-by=gpuconform"})
    return {n["metadata"]["name"] for n in doc["items"]}


def wait_default_service_account(cluster, namespace: str, timeout: float = 30) -> None:
    """Until ``namespace``'s default ServiceAccount exists (pods are refused before): the
    suite's own wait, for a namespace made here."""
    from gpuconform.cluster.namespace import Cleanup, RunNamespace
    ns = RunNamespace(cluster, Cleanup())
    ns.name = namespace
    ns.wait_default_service_account(timeout)
