"""The RBAC of manifests/in-cluster is minimal: every rule names the checks that need it, and
without the rule such a check ends "error" (could not check) with one line naming what it
lacks, ``forbidden: needs <verb> <resource>``. (That it is sufficient, the whole cluster layer
and node checks through k8s-node:// passing with the ServiceAccount's token alone, is
test_entrypoint.py's in-cluster run.)

Each case removes one rule from the applied role, waits until RBAC answers "no" for it
(SubjectAccessReview), runs the suite with a kubeconfig holding only the ServiceAccount's token
and only the checks about that rule (-k), and puts the rule back. The rules the node checks'
probe pods need are removed likewise, with node.reachable run through k8s-node:// on a worker
backed by a good host root.

The admission policy (11-admission-policy.yaml) is proven beside: what it refuses the
ServiceAccount and what it lets through, the probe pod built by the suite's own code included."""
from __future__ import annotations

import copy
import secrets

import pytest

import incluster_harness as h
from cluster_harness import BACKING, PROFILE, backed_workers, by_check
from gpuconform.node import k8s_node
from runner import run_suite

CHECK_IDS = h.CHECK_IDS

#: rule (role:resources:verbs) -> (-k expression, check id, param, the line's start)
REMOVALS = {
    "gpuconform:nodes:list": (
        "test_gpu_workers_registered", "cluster.nodes.gpu_workers", None,
        "forbidden: needs list nodes (cluster-wide)"),
    "gpuconform:namespaces:get": (
        "test_operator_namespace", "cluster.operator.namespace", None,
        "forbidden: needs get namespaces (namespace gpu-operator)"),
    "gpuconform:namespaces:create+delete": (
        "test_no_gpu_without_request", "cluster.workload.isolation", None,
        "forbidden: needs create namespaces (cluster-wide)"),
    "gpuconform:serviceaccounts:list+watch": (
        "test_no_gpu_without_request", "cluster.workload.isolation", None,
        "forbidden: needs list serviceaccounts (in namespace gpuconform-"),
    "gpuconform:pods:create+get+list+watch+delete": (
        "test_no_gpu_without_request", "cluster.workload.isolation", None,
        "forbidden: needs create pods (in namespace gpuconform-"),
    "gpuconform:pods/log:get": (
        "test_no_gpu_without_request", "cluster.workload.isolation", None,
        "forbidden: needs get pods/log (in namespace gpuconform-"),
    "gpuconform:events:list+watch": (
        "test_mig_exhaustion_pending and 1g", "cluster.mig.exhaustion", "nvidia.com/mig-1g.10gb",
        "forbidden: needs list events (in namespace gpuconform-"),
    "gpuconform:clusterpolicies.nvidia.com:list": (
        "test_clusterpolicy_present", "cluster.operator.clusterpolicy_present", None,
        "forbidden: needs list clusterpolicies.nvidia.com (cluster-wide)"),
    "gpuconform-gpu-operator:configmaps:get": (
        "test_allocatable_matches_config and gpu-worker-1", "cluster.mig.allocatable", "gpu-worker-1",
        "forbidden: needs get configmaps (in namespace gpu-operator)"),
    "gpuconform-gpu-operator:daemonsets.apps:list": (
        "test_validations_completed", "cluster.operator.validation", None,
        "forbidden: needs list daemonsets.apps (in namespace gpu-operator)"),
}
#: rules for what the bed does not have (Kyverno): named checks, not exercised here
NOT_IN_THE_BED = {"gpuconform:clusterpolicies.kyverno.io:list", "gpuconform-gpu-operator:policies.kyverno.io:list"}

#: the node checks through k8s-node://: rule -> (--hosts, the line in node.reachable's message);
#: the selector is the Job's default (read from 60-cronjob.yaml), the single node one it selects
PROBED = "gpu-worker-1"
NODE_REMOVALS = {
    "gpuconform:nodes:list": (h.job_default_hosts(), "forbidden: needs list nodes (cluster-wide)"),
    "gpuconform:namespaces:create+delete": (
        f"k8s-node://{PROBED}", "forbidden: needs create namespaces (cluster-wide)"),
    "gpuconform:serviceaccounts:list+watch": (
        f"k8s-node://{PROBED}", "forbidden: needs list serviceaccounts (in namespace gpuconform-"),
    "gpuconform:pods:create+get+list+watch+delete": (
        f"k8s-node://{PROBED}", "forbidden: needs create pods (in namespace gpuconform-"),
    "gpuconform:pods/log:get": (
        f"k8s-node://{PROBED}", "forbidden: needs get pods/log (in namespace gpuconform-"),
}
#: needed by node.reachable's cleanup only: without it the check passes, the cleanup says why
#: its pods stayed until their namespace went
CLEANUP_ONLY = {"gpuconform:pods:deletecollection": "forbidden: needs deletecollection pods (in namespace gpuconform-"}


def _without_rule(label: str, installed: list[dict], admin, line: str):
    """The rule ``label`` and a context in which the applied role lacks it (``line`` names what
    RBAC is then asked about, as the check's line will: ``... needs <verb> <resource> ...``)."""
    rule = next(r for r in h.rules() if r.label == label)
    role = next(o for o in installed if o["kind"] == rule.role_kind and o["metadata"]["name"] == rule.role_name)
    namespace = role["metadata"].get("namespace") or ("gpuconform-x" if "gpuconform-" in line else None)
    return rule, h.rule_removed(admin, role, rule, line.split("needs ", 1)[1], namespace)


def test_every_rule_names_existing_checks():
    """No rule without a reason: each names at least one check, and each name is a real check id."""
    rules = h.rules()
    assert len(rules) >= 10
    for rule in rules:
        assert rule.checks, f"{rule.label}: no check named in its comment"
        unknown = [c for c in rule.checks if c not in CHECK_IDS]
        assert not unknown, f"{rule.label}: names {unknown}, not check ids of tests/"


def test_every_rule_is_proven_or_said_not_to_be():
    labels = {r.label for r in h.rules()}
    proven = set(REMOVALS) | set(NODE_REMOVALS) | set(CLEANUP_ONLY)
    assert labels == proven | NOT_IN_THE_BED, labels ^ (proven | NOT_IN_THE_BED)
    for_nodes = {r.label for r in h.rules() if r.node_checks}
    assert for_nodes == set(NODE_REMOVALS) | set(CLEANUP_ONLY), for_nodes ^ (set(NODE_REMOVALS) | set(CLEANUP_ONLY))


def test_the_token_is_not_the_admin(admin, installed, sa_token, platform, tmp_path):
    """The suite's ServiceAccount reads no secrets and writes no nodes."""
    for verb, resource in (("list", "secrets"), ("patch", "nodes"), ("delete", "pods")):
        allowed_now = h.allowed(admin, verb, resource, namespace="kube-system")
        assert allowed_now is (verb == "delete"), (verb, resource)  # pods: only for the run's namespace
    assert not h.allowed(admin, "list", "secrets")
    assert not h.allowed(admin, "get", "configmaps", namespace="kube-system")


@pytest.mark.parametrize("label", sorted(REMOVALS))
def test_without_the_rule_the_check_says_what_it_needs(label, admin, installed, sa_kubeconfig, tmp_path):
    k, check_id, param, line = REMOVALS[label]
    rule, removed = _without_rule(label, installed, admin, line)
    assert check_id in rule.checks, f"{label}'s comment does not name {check_id}"
    with removed:
        proc, doc = run_suite("-m", "cluster", "-k", k, "-q", f"--profile={PROFILE}", f"--kubeconfig={sa_kubeconfig}",
                              report_dir=tmp_path / "reports", timeout=300)
    assert doc, proc.stdout[-3000:] + proc.stderr[-2000:]
    result = by_check(doc)[(check_id, param)]
    assert result["verdict"] == "error", (result["verdict"], result["message"])
    assert result["message"].startswith(f"could not check: {line}"), result["message"]
    assert h.USER in result["message"] and "\n" not in result["message"].strip()
    assert proc.returncode == 1  # could not check: REJECTED
    assert "Traceback" not in proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def probed_worker(platform):
    with backed_workers(platform, {PROBED: BACKING[PROBED]}):
        yield PROBED


def _node_run(sa_kubeconfig, tmp_path, hosts):
    """node.reachable alone, through ``hosts``, with the ServiceAccount's token."""
    proc, doc = run_suite("-m", "node", "-k", "reachable", "-q", f"--profile={PROFILE}",
                          f"--kubeconfig={sa_kubeconfig}", f"--hosts={hosts}", report_dir=tmp_path / "reports", timeout=300)
    assert doc, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout[-3000:]
    (result,) = [r for r in doc["results"] if r["check_id"] == "node.reachable"]
    return proc, result


@pytest.mark.parametrize("label", sorted(NODE_REMOVALS))
def test_without_the_rule_the_node_check_through_k8s_node_says_what_it_needs(
        label, admin, installed, sa_kubeconfig, probed_worker, tmp_path):
    hosts, line = NODE_REMOVALS[label]
    rule, removed = _without_rule(label, installed, admin, line)
    assert "node.reachable" in rule.node_checks, f"{label}'s comment does not name node.reachable"
    with removed:
        proc, result = _node_run(sa_kubeconfig, tmp_path, hosts)
    assert result["verdict"] == "error", (result["verdict"], result["message"])
    # the line names one of the verbs the rule granted: whichever call came first (the pods rule's
    # list of the probe pods may beat their creation)
    verbs = label.rsplit(":", 1)[1].split("+")
    scope = line.split("needs ", 1)[1].split(" ", 1)[1]
    assert result["message"].startswith("could not check: "), result["message"]
    assert any(f"forbidden: needs {verb} {scope}" in result["message"] for verb in verbs), result["message"]
    assert h.USER in result["message"] and "\n" not in result["message"].strip()
    assert proc.returncode == 1  # could not check: REJECTED


@pytest.mark.parametrize("label", sorted(CLEANUP_ONLY))
def test_without_the_cleanup_rule_the_run_says_what_it_needs(
        label, admin, installed, sa_kubeconfig, probed_worker, tmp_path):
    line = CLEANUP_ONLY[label]
    rule, removed = _without_rule(label, installed, admin, line)
    assert "node.reachable" in rule.node_checks, f"{label}'s comment does not name node.reachable"
    with removed:
        proc, result = _node_run(sa_kubeconfig, tmp_path, f"k8s-node://{PROBED}")
    assert result["verdict"] == "pass", result["message"]
    cleanup = [s for s in proc.stdout.splitlines() if s.startswith("gpuconform: cleanup: probe pods in gpuconform-")]
    assert len(cleanup) == 1 and line in cleanup[0] and h.USER in cleanup[0], proc.stdout[-3000:]


def test_the_fence_keeps_writes_to_its_own_run_namespaces(admin, installed, sa_kubeconfig):
    """RBAC grants namespace and pod writes cluster-wide (the run's namespace is named at run
    time); 11-admission-policy.yaml denies the ServiceAccount every such write outside a
    gpuconform-<run id> namespace labelled managed-by=gpuconform, and allows it inside."""
    from gpuconform.cluster.connect import connect
    from gpuconform.cluster.errors import Forbidden
    sa = connect(str(sa_kubeconfig), timeout=30)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "not-ours", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
    own = _namespace("gpuconform-fence-test", "restricted")
    denied = [
        lambda: sa.request("POST", "/api/v1/namespaces/default/pods", {"dryRun": "All"}, body=pod,
                           what="creating pod default/not-ours"),
        lambda: sa.request("DELETE", "/api/v1/namespaces/gpu-operator", {"dryRun": "All"},
                           what="deleting namespace gpu-operator"),
        lambda: sa.request("POST", "/api/v1/namespaces", {"dryRun": "All"},
                           body={**own, "metadata": {"name": "gpuconform-unlabelled"}},
                           what="creating namespace gpuconform-unlabelled"),
    ]
    for attempt in denied:
        with pytest.raises(Forbidden) as refused:
            attempt()
        assert "gpuconform may write only its own run namespaces" in str(refused.value), refused.value
        assert ": HTTP 403 Forbidden: " in str(refused.value), refused.value
    sa.request("POST", "/api/v1/namespaces", {"dryRun": "All"}, body=own)  # its own kind: allowed
    sa.close()


def _namespace(name: str, enforce: str | None) -> dict:
    labels = {"app.kubernetes.io/managed-by": "gpuconform"}
    if enforce:
        labels.update({"pod-security.kubernetes.io/enforce": enforce, "pod-security.kubernetes.io/enforce-version": "latest"})
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


@pytest.fixture
def fenced_namespaces(admin, installed, sa_kubeconfig):
    """As the ServiceAccount (connection), three namespaces of a made-up run: its restricted run
    namespace and privileged probe namespace (created by the ServiceAccount), and one without
    Pod Security labels (created by the admin: what every namespace is where Pod Security
    admission is not configured), so that a refusal there is the fence's alone."""
    from gpuconform.cluster.connect import connect
    sa = connect(str(sa_kubeconfig), timeout=30)
    run = f"gpuconform-fence-{secrets.token_hex(3)}"
    made = {"run": _namespace(run, "restricted"), "probes": _namespace(run + k8s_node.NAMESPACE_SUFFIX, "privileged"),
            "no-pod-security": _namespace(run + "-plain", None)}
    try:
        for key, ns in made.items():
            (admin if key == "no-pod-security" else sa).request("POST", "/api/v1/namespaces", body=ns)
        for ns in made.values():  # pods are refused until it exists
            h.wait_default_service_account(admin, ns["metadata"]["name"])
        yield sa, {key: ns["metadata"]["name"] for key, ns in made.items()}
    finally:
        for ns in made.values():
            admin.request("DELETE", f"/api/v1/namespaces/{ns['metadata']['name']}", missing_ok=True)
        sa.close()


def _probe_pod(namespace: str) -> dict:
    """The probe pod exactly as the suite builds it (gpuconform/node/k8s_node/template.py)."""
    settings = k8s_node.Settings(image="busybox:1", image_pull_policy="IfNotPresent", start_s=60, probe_s=60,
                                 api_s=10, parallel=8)
    return k8s_node.pod_body(k8s_node.pod_name(PROBED), PROBED, "echo probe", namespace, {}, settings)


def _refused(sa, pod: dict) -> str:
    from gpuconform.cluster.errors import Forbidden
    with pytest.raises(Forbidden) as refused:
        sa.request("POST", f"/api/v1/namespaces/{pod['metadata']['namespace']}/pods", {"dryRun": "All"}, body=pod,
                   what=f"creating pod {pod['metadata']['name']}")
    return str(refused.value)


def test_the_fence_admits_the_probe_pod_only_in_its_shape_and_namespace(fenced_namespaces):
    """The ServiceAccount may create a restricted run namespace and a privileged -node-probes one,
    and the suite's own probe pod in the latter; it is refused the probe pod (privileged) in its
    run namespace, any host access in a namespace that is not a -node-probes one even where Pod
    Security would let it pass, and in the probe namespace a pod that mounts / read-write, adds
    an init container or hostIPC, or carries its ServiceAccount token."""
    sa, ns = fenced_namespaces
    probe = _probe_pod(ns["probes"])
    sa.request("POST", f"/api/v1/namespaces/{ns['probes']}/pods", {"dryRun": "All"}, body=probe)  # admitted

    in_run_namespace = _refused(sa, {**probe, "metadata": {**probe["metadata"], "namespace": ns["run"]}})
    assert "violates PodSecurity" in in_run_namespace or "host access" in in_run_namespace, in_run_namespace
    elsewhere = _refused(sa, {**probe, "metadata": {**probe["metadata"], "namespace": ns["no-pod-security"]}})
    assert "gpuconform runs a pod with host access" in elsewhere and "only as a node probe" in elsewhere, elsewhere

    def changed(edit) -> dict:
        pod = copy.deepcopy(probe)
        edit(pod["spec"])
        return pod
    read_write = changed(lambda s: s["containers"][0]["volumeMounts"][0].update(readOnly=False,
                                                                                 recursiveReadOnly="Disabled"))
    assert "mounts the node's / read-only at /host" in _refused(sa, read_write)
    init = changed(lambda s: s.update(initContainers=[{**s["containers"][0], "name": "before"}]))
    assert "one container running chroot /host /bin/sh -c <probe>" in _refused(sa, init)
    other_command = changed(lambda s: s["containers"][0].update(command=["nsenter", "-t", "1", "-m", "sh"]))
    assert "one container running chroot /host /bin/sh -c <probe>" in _refused(sa, other_command)
    host_ipc = changed(lambda s: s.update(hostIPC=True))
    assert "shares no hostIPC" in _refused(sa, host_ipc)
    token = changed(lambda s: s.update(automountServiceAccountToken=True))
    assert "carries no ServiceAccount token" in _refused(sa, token)


@pytest.mark.parametrize("name_suffix, enforce", [("", "privileged"), ("", None), ("", "baseline"),
                                                   ("-node-probes", "baseline")])
def test_the_fence_keeps_its_namespaces_restricted(installed, sa_kubeconfig, name_suffix, enforce):
    """A namespace the ServiceAccount creates enforces Pod Security restricted; privileged only
    for a -node-probes one."""
    from gpuconform.cluster.connect import connect
    from gpuconform.cluster.errors import Forbidden
    sa = connect(str(sa_kubeconfig), timeout=30)
    ns = _namespace(f"gpuconform-fence-{secrets.token_hex(3)}{name_suffix}", enforce)
    with pytest.raises(Forbidden) as refused:
        sa.request("POST", "/api/v1/namespaces", {"dryRun": "All"}, body=ns)
    sa.close()
    assert "gpuconform's namespaces enforce Pod Security restricted" in str(refused.value), refused.value
    assert f"would enforce {enforce or '(none)'}" in str(refused.value), refused.value
