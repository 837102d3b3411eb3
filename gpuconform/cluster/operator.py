"""The GPU Operator as its objects show it: ClusterPolicy spec values, operand DaemonSets,
validator pods. Pure functions over API JSON; each problem is one short line naming the node."""
from __future__ import annotations

import dataclasses
from typing import Any

from gpuconform.cluster import nodes as nodes_mod
from gpuconform.cluster.pods import describe_pod, pod_ready


class _Missing:
    def __repr__(self) -> str:
        return "<unset>"


MISSING = _Missing()


def spec_value(spec: dict, dotted: str) -> Any:
    """``spec['mig']['strategy']`` for ``mig.strategy``; ``MISSING`` when a step is absent."""
    value: Any = spec
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return MISSING
        value = value[part]
    return value


#: What the GPU Operator does when a ClusterPolicy spec value is absent (or null, which the API
#: server prunes), by dotted spec path. Two upstream sources, NVIDIA/gpu-operator at
#: v0.0.0-20250917190837-d73a0086a6ba:
#: * ``api/nvidia/v1/clusterpolicy_types.go``: each ``IsEnabled()`` returns its default when
#:   ``Enabled`` is nil (likewise ``UseNvdiaDriverCRDType``, ``UsePrecompiledDrivers``,
#:   ``IsHostMOFED``, ``IsNLSEnabled``, CDI ``IsDefault``); ``psp.enabled`` has no reader: nil is off.
#: * the CRD's schema ``default:`` values (``deployments/gpu-operator/crds/nvidia.com_clusterpolicies.yaml``),
#:   which the API server fills in where the parent object exists.
#: ``mig.strategy`` has neither: unset, the operator passes no MIG_STRATEGY and the device plugin
#: and GFD use their own default, ``none`` (controllers/object_controls.go applyMIGConfiguration).
#: The Helm chart writes several of these only when they differ from the default (e.g.
#: ``sandboxDevicePlugin.enabled`` only when true), so absent is a normal, correct state.
OPERATOR_DEFAULTS: dict[str, Any] = {
    # IsEnabled() defaulting to true
    "driver.enabled": True, "toolkit.enabled": True, "devicePlugin.enabled": True,
    "dcgmExporter.enabled": True, "dcgm.enabled": True, "gfd.enabled": True, "migManager.enabled": True,
    # IsEnabled() (or the like) defaulting to false
    "vfioManager.enabled": False, "vgpuManager.enabled": False, "vgpuDeviceManager.enabled": False,
    "sandboxWorkloads.enabled": False, "sandboxDevicePlugin.enabled": False, "psa.enabled": False,
    "psp.enabled": False, "nodeStatusExporter.enabled": False, "gds.enabled": False,
    "gdrcopy.enabled": False, "kataManager.enabled": False, "ccManager.enabled": False,
    "cdi.enabled": False, "cdi.default": False, "driver.rdma.enabled": False, "driver.rdma.useHostMofed": False,
    "driver.useNvidiaDriverCRD": False, "driver.usePrecompiled": False,
    "driver.licensingConfig.nlsEnabled": False, "dcgmExporter.serviceMonitor.enabled": False,
    # CRD schema defaults
    "migManager.config.name": "default-mig-parted-config", "migManager.config.default": "all-disabled",
    "vgpuDeviceManager.config.default": "default", "operator.defaultRuntime": "docker",
    "operator.runtimeClass": "nvidia", "sandboxWorkloads.defaultWorkload": "container",
    "toolkit.installDir": "/usr/local/nvidia", "driver.kernelModuleType": "auto",
    "daemonsets.updateStrategy": "RollingUpdate", "devicePlugin.mps.root": "/run/nvidia/mps",
    "kataManager.config.artifactsDir": "/opt/nvidia-gpu-operator/artifacts/runtimeclasses",
    "driver.upgradePolicy.autoUpgrade": False, "driver.upgradePolicy.maxParallelUpgrades": 1,
    "driver.upgradePolicy.maxUnavailable": "25%", "driver.upgradePolicy.waitForCompletion.timeoutSeconds": 0,
    "driver.upgradePolicy.podDeletion.force": False, "driver.upgradePolicy.podDeletion.timeoutSeconds": 300,
    "driver.upgradePolicy.podDeletion.deleteEmptyDir": False, "driver.upgradePolicy.drain.enable": False,
    "driver.upgradePolicy.drain.force": False, "driver.upgradePolicy.drain.timeoutSeconds": 300,
    "driver.upgradePolicy.drain.deleteEmptyDir": False,
    # neither: the operands' own default
    "mig.strategy": "none",
}


def effective_spec_value(spec: dict, dotted: str) -> tuple[Any, Any]:
    """(literal, effective) value of ``spec.<dotted>``: what the object holds (``MISSING`` when
    absent) and what the operator acts on (the literal, else :data:`OPERATOR_DEFAULTS`, else
    ``MISSING``)."""
    literal = spec_value(spec, dotted)
    if literal is MISSING or literal is None:
        return literal, OPERATOR_DEFAULTS.get(dotted, MISSING)
    return literal, literal


def describe_spec_value(literal: Any, effective: Any) -> str:
    """``True``, or ``unset (the operator's default: False)``, or ``unset (no operator default)``."""
    if literal is not MISSING and literal is not None:
        return repr(literal)
    default = "no operator default" if effective is MISSING else f"the operator's default: {effective!r}"
    return f"unset ({default})"


def spec_mismatch(spec: dict, dotted: str, want: Any) -> str | None:
    """None when the operator's effective ``spec.<dotted>`` is ``want``; else what it is."""
    literal, effective = effective_spec_value(spec, dotted)
    if effective == want:
        return None
    return f"spec.{dotted} is {describe_spec_value(literal, effective)}, expected {want!r}"


def env_value(env: list[dict] | None, name: str) -> Any:
    for e in env or []:
        if e.get("name") == name:
            return e.get("value", "")
    return MISSING


def selector_matches(node_labels: dict[str, str], node_selector: dict[str, str] | None) -> bool:
    return all(node_labels.get(k) == v for k, v in (node_selector or {}).items())


def label_selector(match_labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(match_labels.items()))


#: taints the DaemonSet controller tolerates on every DaemonSet pod by itself
DAEMONSET_TOLERATED = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable",
                       "node.kubernetes.io/disk-pressure", "node.kubernetes.io/memory-pressure",
                       "node.kubernetes.io/pid-pressure", "node.kubernetes.io/unschedulable",
                       "node.kubernetes.io/network-unavailable")


#: The GPU Operator's operand DaemonSets and the ClusterPolicy switch that deploys each (None:
#: always), as its assets name them (gpu-operator assets/state-*/0*daemonset.yaml, 0400_dcgm.yml;
#: the driver under useNvidiaDriverCRD is deployed by NVIDIADriver objects, not listed here).
OPERANDS: dict[str, str | None] = {
    "nvidia-driver-daemonset": "driver.enabled",
    "nvidia-container-toolkit-daemonset": "toolkit.enabled",
    "nvidia-device-plugin-daemonset": "devicePlugin.enabled",
    "gpu-feature-discovery": "gfd.enabled",
    "nvidia-dcgm": "dcgm.enabled",
    "nvidia-dcgm-exporter": "dcgmExporter.enabled",
    "nvidia-mig-manager": "migManager.enabled",
    "nvidia-node-status-exporter": "nodeStatusExporter.enabled",
    "nvidia-operator-validator": None,
}
MIG_MANAGER = "nvidia-mig-manager"


def enabled_operands(spec: dict) -> list[str]:
    """The operand DaemonSets the operator deploys under ClusterPolicy ``spec``."""
    out = []
    for operand, switch in OPERANDS.items():
        if operand == "nvidia-driver-daemonset" and effective_spec_value(spec, "driver.useNvidiaDriverCRD")[1]:
            continue
        if switch is None or effective_spec_value(spec, switch)[1] is True:
            out.append(operand)
    return out


def operand_switched_off(spec: dict, operand: str) -> str | None:
    """Why the operator does not deploy ``operand`` under ``spec`` (its switch is off), or None."""
    switch = OPERANDS.get(operand)
    if switch is None:
        return None
    literal, effective = effective_spec_value(spec, switch)
    if effective is True:
        return None
    return f"ClusterPolicy spec.{switch} is {describe_spec_value(literal, effective)}: the operator does not deploy it"


def operand_nodes(operand: str, gpu_nodes) -> list[dict]:
    """The GPU workers the operator deploys ``operand`` on: the MIG manager only where a GPU is
    MIG-capable (state_manager.go: the mig-manager deploy label only with hasMIGCapableGPU)."""
    if operand != MIG_MANAGER:
        return list(gpu_nodes)
    return [n for n in gpu_nodes if nodes_mod.mig_capable(nodes_mod.labels(n))]


def operand_unscheduled(ds: dict, gpu_nodes) -> list[str]:
    """GPU workers the DaemonSet cannot place a pod on (nodeSelector or taints), with why."""
    pod_spec = ds["spec"]["template"].get("spec") or {}
    selector = pod_spec.get("nodeSelector") or {}
    out = []
    for node in gpu_nodes:
        node_labels = nodes_mod.labels(node)
        wrong = {k: v for k, v in selector.items() if node_labels.get(k) != v}
        if wrong and nodes_mod.operands_disabled(node_labels):
            out.append(f"{nodes_mod.name(node)}: label {nodes_mod.LABEL_OPERANDS}=false: the GPU Operator disables "
                       f"every operand there (\"Operands are disabled for node\")")
            continue
        if wrong:
            shown = ", ".join(f"{k}={node_labels.get(k, '<unset>')} (wants {v})" for k, v in wrong.items())
            out.append(f"{nodes_mod.name(node)}: label {shown}")
            continue
        for taint in (node.get("spec") or {}).get("taints") or []:
            if taint.get("key") in DAEMONSET_TOLERATED:
                continue
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not nodes_mod.tolerates(
                    pod_spec.get("tolerations") or [], taint):
                out.append(f"{nodes_mod.name(node)}: taint {taint.get('key')}:{taint.get('effect')} not tolerated")
                break
    return out


def operand_short(ds: dict) -> bool:
    st = ds.get("status") or {}
    desired = st.get("desiredNumberScheduled", 0)
    return (st.get("numberAvailable", 0) < desired or st.get("numberReady", 0) < desired
            or st.get("observedGeneration", 0) < ds["metadata"].get("generation", 0))


def operand_pods_not_available(pods, gpu_node_names) -> list[str]:
    """Per GPU worker: no pod of the operand there, or one that is not Ready (with its state)."""
    by_node: dict[str, list[dict]] = {}
    for p in pods:
        if not p["metadata"].get("deletionTimestamp"):
            by_node.setdefault((p.get("spec") or {}).get("nodeName") or "", []).append(p)
    out = []
    for node in gpu_node_names:
        mine = by_node.get(node, [])
        if not mine:
            out.append(f"{node}: no pod")
        elif not any(pod_ready(p) for p in mine):
            out.append(f"{node}: {'; '.join(describe_pod(p) for p in mine)}")
    return out


VALIDATOR_DAEMONSET = "nvidia-operator-validator"
#: The validations that may start a workload pod, and that pod's label app=<value>
#: (gpu-operator validator/main.go: cudaValidatorLabelValue, pluginValidatorLabelValue).
WORKLOAD_VALIDATORS = {"cuda": "nvidia-cuda-validator", "plugin": "nvidia-device-plugin-validator"}
#: Go strconv.ParseBool, as urfave/cli v2 reads the validator's WITH_WORKLOAD; an empty value is false.
_GO_BOOL = {**dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
            **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False", ""), False)}


@dataclasses.dataclass(frozen=True)
class ValidationWorkload:
    """Whether the ``<component>-validation`` init container starts its workload pod, and why."""
    component: str
    app: str
    expected: bool | None  #: None: WITH_WORKLOAD is no boolean (the validator refuses to start)
    why: str

    def __str__(self) -> str:
        return f"{self.component}-validation: {self.why} -> {self.app} pod {'' if self.expected else 'not '}expected"


def validation_workloads(validator_ds: dict, policy_spec: dict) -> list[ValidationWorkload]:
    """For cuda and plugin validation: WITH_WORKLOAD of the validator DaemonSet's init container
    ``<component>-validation``, overridden by ClusterPolicy ``spec.validator.<component>.env`` (the
    operator writes that env into the container: controllers/object_controls.go
    TransformValidatorComponent), unset = true (validator/main.go, flag with-workload). No such
    init container (the operator drops plugin-validation when the device plugin is disabled): no pod.
    The operator's own asset sets plugin-validation WITH_WORKLOAD=false from v25.3.3 on
    (assets/state-operator-validation/0500_daemonset.yaml)."""
    pod_spec = (validator_ds.get("spec") or {}).get("template", {}).get("spec") or {}
    init = {c.get("name"): c for c in pod_spec.get("initContainers") or []}
    out = []
    for component, app in WORKLOAD_VALIDATORS.items():
        container = init.get(f"{component}-validation")
        if container is None:
            out.append(ValidationWorkload(component, app, False, f"no {component}-validation init container"))
            continue
        policy_env = spec_value(policy_spec, f"validator.{component}.env")
        value = env_value(policy_env if isinstance(policy_env, list) else [], "WITH_WORKLOAD")
        source = f"ClusterPolicy spec.validator.{component}.env"
        if value is MISSING:
            value, source = env_value(container.get("env"), "WITH_WORKLOAD"), "DaemonSet"
        if value is MISSING:
            out.append(ValidationWorkload(component, app, True, "WITH_WORKLOAD unset (the validator's default: true)"))
        else:
            why = f"WITH_WORKLOAD={value!r} ({source})"
            out.append(ValidationWorkload(component, app, _GO_BOOL.get(str(value)), why))
    return out


def _validators_by_app_and_node(pods) -> dict[tuple[str, str | None], list[dict]]:
    by: dict[tuple[str, str | None], list[dict]] = {}
    for p in pods:
        app = (p["metadata"].get("labels") or {}).get("app", "")
        by.setdefault((app, (p.get("spec") or {}).get("nodeName")), []).append(p)
    return by


def _succeeded(pod: dict) -> bool:
    return (pod.get("status") or {}).get("phase") == "Succeeded"


def _expected_validators(workloads: list[ValidationWorkload]):
    return [(VALIDATOR_DAEMONSET, pod_ready, "Ready")] + [(w.app, _succeeded, "Succeeded") for w in workloads if w.expected]


def validator_problems(pods, gpu_node_names, workloads: list[ValidationWorkload]) -> list[str]:
    """Per GPU worker: the nvidia-operator-validator pod Ready (every validation init container
    done) and, for each validation that runs a workload, its pod Succeeded."""
    by = _validators_by_app_and_node(pods)
    out = [f"{w.component}-validation: {w.why} is no boolean" for w in workloads if w.expected is None]
    for node in gpu_node_names:
        for app, done, _ in _expected_validators(workloads):
            mine = by.get((app, node), [])
            if not mine:
                out.append(f"{node}: no {app} pod")
            elif not any(done(p) for p in mine):
                out.append(f"{node}: {'; '.join(describe_pod(p) for p in mine)}")
    return out


def validator_summary(pods, gpu_node_names, workloads: list[ValidationWorkload]) -> str:
    """The validator pods in counts, one line per pod kind the rule expects (a fleet's thousands of
    pods are not listed: each that is not done is named by :func:`validator_problems`)."""
    by, nodes = _validators_by_app_and_node(pods), list(gpu_node_names)
    lines = []
    for app, done, word in _expected_validators(workloads):
        mine = [p for n in nodes for p in by.get((app, n), [])]
        covered = sum(1 for n in nodes if by.get((app, n)))
        lines.append(f"{app}: {len(mine)} pods on {covered} of {len(nodes)} GPU workers, "
                     f"{sum(1 for p in mine if done(p))} {word}")
    return "\n".join(lines)
