"""The GPU Operator where the platform runs it: its namespace, a ready ClusterPolicy carrying
the profile's values, every operand it deploys available on its GPU workers, the validations
done. A platform whose GPUs come from NVIDIA's device plugin alone (cluster.gpu_stack) has none
of these: each check then says so."""
import pytest

from gpuconform.checks import check
from gpuconform.cluster import gpunode, nodes, operator
from gpuconform.cluster.operator import MISSING
from gpuconform.plugin.cluster_fixtures import declared


def _operator_stack(cluster, cluster_expected) -> None:
    """Skip where the platform runs no GPU Operator (the profile's cluster.gpu_stack, or auto
    and no ClusterPolicy CRD)."""
    stack, why = gpunode.stack(cluster, declared(cluster_expected))
    if stack != "gpu-operator":
        pytest.skip(why)


def _policy(cluster, cluster_expected) -> dict | None:
    _operator_stack(cluster, cluster_expected)
    return cluster.cluster_policy(cluster_expected.gpu_operator.cluster_policy)


@check("cluster.operator.namespace", "GPU Operator namespace exists",
       fix="helm install gpu-operator nvidia/gpu-operator -n gpu-operator --create-namespace (with the "
           "profile's values), or correct cluster.gpu_operator.namespace")
def test_operator_namespace(cluster, cluster_expected):
    """The namespace cluster.gpu_operator.namespace exists and is Active."""
    _operator_stack(cluster, cluster_expected)
    ns = cluster.operator_namespace_object()
    want = cluster_expected.gpu_operator.namespace
    assert ns is not None, f"namespace {want} not found"
    assert ns["status"].get("phase") == "Active", f"namespace {want} is {ns['status'].get('phase')}"


@check("cluster.operator.clusterpolicy_present", "GPU Operator ClusterPolicy exists",
       fix="install the GPU Operator Helm chart (it creates the ClusterPolicy CRD and cluster-policy)")
def test_clusterpolicy_present(cluster, cluster_expected):
    """The ClusterPolicy named cluster.gpu_operator.cluster_policy exists."""
    _operator_stack(cluster, cluster_expected)
    policies = cluster.cluster_policies()
    want = cluster_expected.gpu_operator.cluster_policy
    assert policies is not None, "the ClusterPolicy CRD (clusterpolicies.nvidia.com) is not installed"
    names = [p["metadata"]["name"] for p in policies]
    assert want in names, f"no ClusterPolicy {want}; found: {', '.join(names) or 'none'}"


@check("cluster.operator.clusterpolicy_ready", "GPU Operator ClusterPolicy is ready",
       fix="kubectl get pods -n gpu-operator: the operand named in the ClusterPolicy's Ready condition "
           "is not running; read its pod's events and log",
       needs=["cluster.operator.clusterpolicy_present"])
def test_clusterpolicy_ready(cluster, cluster_expected, evidence):
    """ClusterPolicy status.state is "ready"."""
    status = (_policy(cluster, cluster_expected) or {}).get("status") or {}
    conditions = "; ".join(f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')}".rstrip(": ")
                           for c in status.get("conditions") or [])
    evidence.add("ClusterPolicy status", f"state: {status.get('state')}\nconditions: {conditions or '(none)'}")
    assert status.get("state") == "ready", f"ClusterPolicy state is {status.get('state')!r}, expected 'ready'" + (
        f" ({conditions})" if conditions else "")


@check("cluster.operator.spec", "ClusterPolicy carries the profile's value",
       fix="set <path> to the profile's value in the operator's Helm values and upgrade: helm upgrade gpu-operator "
           "nvidia/gpu-operator -n gpu-operator --reuse-values --set <path>=<value> (e.g. mig.strategy=mixed, "
           "sandboxDevicePlugin.enabled=false: the chart then leaves it unset, which the operator reads as false); "
           "or correct cluster.gpu_operator.spec in the profile",
       needs=["cluster.operator.clusterpolicy_present"])
def test_clusterpolicy_spec_value(cluster, cluster_expected, spec_path, evidence):
    """The operator's effective spec.<path> (the value set, else the operator's default for an
    unset one) equals cluster.gpu_operator.spec[<path>]."""
    spec = _policy(cluster, cluster_expected)["spec"]
    want = cluster_expected.gpu_operator.spec[spec_path]
    literal, effective = operator.effective_spec_value(spec, spec_path)
    evidence.add(f"spec.{spec_path}", f"ClusterPolicy: {operator.describe_spec_value(literal, effective)}\n"
                                      f"operator acts on: {effective!r}\nprofile: {want!r}")
    problem = operator.spec_mismatch(spec, spec_path, want)
    assert problem is None, problem


@check("cluster.operator.validator_env", "Driver validator has the profile's environment",
       fix="helm upgrade ... --set validator.driver.env[0].name=DISABLE_DEV_CHAR_SYMLINK_CREATION "
           "--set-string validator.driver.env[0].value=true",
       needs=["cluster.operator.clusterpolicy_present"])
def test_validator_driver_env(cluster, cluster_expected, validator_env):
    """ClusterPolicy spec.validator.driver.env sets the variable to the profile's value."""
    env = operator.spec_value(_policy(cluster, cluster_expected)["spec"], "validator.driver.env")
    want = cluster_expected.gpu_operator.validator_driver_env[validator_env]
    got = operator.env_value(env if env is not MISSING else [], validator_env)
    assert got == want, (f"spec.validator.driver.env {validator_env} is "
                         f"{'unset' if got is MISSING else repr(got)}, expected {want!r}")


@check("cluster.operator.toleration", "Operands tolerate the GPU workers' taint",
       fix="helm upgrade ... with daemonsets.tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]",
       needs=["cluster.operator.clusterpolicy_present"])
def test_operand_toleration(cluster, cluster_expected, toleration):
    """ClusterPolicy spec.daemonsets.tolerations tolerate the taint(s) the profile's toleration
    stands for, by the scheduler's rules (no effect: every effect; Exists without key: every taint)."""
    have = operator.spec_value(_policy(cluster, cluster_expected)["spec"], "daemonsets.tolerations")
    have = [] if have is MISSING else have
    untolerated = [f"{t['key']}:{t['effect']}" for t in toleration.taints() if not nodes.tolerates(have, t)]
    assert not untolerated, (f"spec.daemonsets.tolerations do not tolerate taint {', '.join(untolerated)} "
                             f"({toleration}); has {have or 'none'}")


@check("cluster.operator.operand", "Operand DaemonSet is available on every GPU worker",
       fix="kubectl -n gpu-operator describe ds <operand>; a node missing the nvidia.com/gpu.deploy.<operand> "
           "label or tainted without toleration gets no pod; a crash-looping pod: read its log",
       needs=["cluster.operator.namespace"])
def test_operand_available(cluster, cluster_expected, operand):
    """The DaemonSet runs one available pod on every GPU worker the operator deploys it on (the
    MIG manager: MIG-capable ones), none unscheduled, none unavailable."""
    spec = (_policy(cluster, cluster_expected) or {}).get("spec") or {}
    ds = cluster.daemonset(operand)
    off = operator.operand_switched_off(spec, operand)
    assert ds is not None, f"DaemonSet {operand} not found in {cluster_expected.gpu_operator.namespace}" + (
        f": {off}; set it true, or leave {operand} out of cluster.gpu_operator.operands" if off else "")
    targets = operator.operand_nodes(operand, cluster.gpu_nodes())
    problems = operator.operand_unscheduled(ds, targets)
    if operator.operand_short(ds):
        pods = cluster.pods_of(operator.label_selector(ds["spec"]["selector"]["matchLabels"]))
        problems += [p for p in operator.operand_pods_not_available(pods, [nodes.name(n) for n in targets])
                     if not any(p.split(":")[0] == u.split(":")[0] for u in problems)]
    st = ds.get("status") or {}
    assert not problems, (f"{operand}: {st.get('numberAvailable', 0)} of {st.get('desiredNumberScheduled', 0)} "
                          f"available on {len(targets)} GPU workers; " + "; ".join(problems))


@check("cluster.operator.validation", "GPU Operator validations completed on every GPU worker",
       fix={"default": "read the failing validator init container's log (kubectl -n gpu-operator logs "
                       "<nvidia-operator-validator-pod> -c <container>); 'last insn is not an exit or jmp' "
                       "means net.core.bpf_jit_harden=2 on the host: set it to 1 (remediation/sysctl.sh)"},
       needs=["cluster.operator.namespace"])
def test_validations_completed(cluster, cluster_expected, evidence):
    """On every GPU worker the nvidia-operator-validator pod is Ready (all validation init containers
    done), and the nvidia-cuda-validator / nvidia-device-plugin-validator pod Succeeded where that
    validation runs with a workload (WITH_WORKLOAD of the validator's DaemonSet and ClusterPolicy)."""
    _operator_stack(cluster, cluster_expected)
    ds = cluster.daemonset(operator.VALIDATOR_DAEMONSET)
    assert ds is not None, (f"DaemonSet {operator.VALIDATOR_DAEMONSET} not found in "
                            f"{cluster_expected.gpu_operator.namespace}: the operator has not deployed its validator")
    workloads = operator.validation_workloads(ds, (_policy(cluster, cluster_expected) or {}).get("spec") or {})
    pods = cluster.validator_pods()
    evidence.add("validation workloads", "\n".join(map(str, workloads)))
    problems = operator.validator_problems(pods, cluster.gpu_node_names(), workloads)
    evidence.add("validator pods", operator.validator_summary(pods, cluster.gpu_node_names(), workloads))
    assert not problems, "; ".join(problems)
