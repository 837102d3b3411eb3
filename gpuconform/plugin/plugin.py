"""Wiring only: options, markers, the run's inputs read once (inputs.py), and the modules that
hold fixtures, hooks and the report writers."""
from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from gpuconform import gcpause

# The suite's modules (the profile's models, the probe's topics and parsers) load with the collector
# paused, and what they made is then frozen out of its passes: every run pays this before its first
# probe, and the collector's passes over it were 20 ms of a 10-host run's 0.32 s start (issue #27;
# gpuconform/plugin/heap.py)
with gcpause.paused():
    from gpuconform.layers import CHECK_LAYERS
    from gpuconform.plugin import fixtures, hosts, inputs, keys
    from gpuconform.suite import is_suite

#: every marker of the suite; pyproject.toml repeats them (selftest/unit/test_layers.py keeps it in step)
MARKERS = {
    **CHECK_LAYERS,
    "mig": "checks about MIG configuration",
    "disruptive": "checks that change the platform (opt-in)",
    "security": "security findings",
    "aiconformance": "CNCF Kubernetes AI Conformance: the requirement checks (opt-in; "
                     "tests/cluster/test_aiconformance.py) and the suite checks that decide a requirement "
                     "(--ai-conformance)",
    "check(id, title, fix, needs, evidence)": "conformance check metadata (stable id, title, remediation, "
                                               "prerequisites, the facts shown as evidence)",
}


#: The exit code is drawn from the run's verdict (gpuconform/plugin/reporting.py: exit_code).
EXIT_CODES = ("exit code: 0 ACCEPTED (everything passed, or every failure waived); 1 REJECTED "
              "(a failure, an error = could not check, an expired waiver, no check ran, or a drift "
              "kind named by --fail-on-drift); "
              "2 interrupted (the report of what finished is written); 4 bad input (one line naming it)")


#: the suite's own options (filled by pytest_addoption): given where no suite runs, they are a mistake
OWN_OPTIONS: set[str] = set()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpuconform", f"gpuconform platform conformance; {EXIT_CODES}")
    group.addoption("--profile", dest="gpuconform_profile", metavar="PATH",
                    default=os.environ.get("GPUCONFORM_PROFILE"),
                    help="platform profile YAML, or the name of an example shipped with the suite (seed-h100, "
                         "h200-devbox …) (default: $GPUCONFORM_PROFILE, else profiles/seed-h100.yaml)")
    group.addoption("--report-dir", dest="gpuconform_report_dir", metavar="DIR", default=None,
                    help="where HTML/JSON reports go (default: ./reports, in the folder the run is started from)")
    group.addoption("--report-name", dest="gpuconform_report_name", metavar="NAME", default=None,
                    help="report file name without extension (default: <profile>-<UTC timestamp>)")
    group.addoption("--no-reports", dest="gpuconform_no_reports", action="store_true",
                    help="write no HTML/JSON report")
    group.addoption("--waivers", dest="gpuconform_waivers", metavar="PATH", default=None,
                    help="waiver YAML: known failures accepted until an expiry date (see gpuconform/report/README.md)")
    group.addoption("--signoff-approver", dest="gpuconform_signoff_approver", metavar="NAME", default=None,
                    help="approver name printed in the report's sign-off block (default: a blank line to fill in)")
    group.addoption("--signoff-role", dest="gpuconform_signoff_role", metavar="ROLE", default=None,
                    help="approver role printed in the report's sign-off block (default: a blank line)")
    group.addoption("--remediate", dest="gpuconform_remediate", choices=("plan", "apply"), default=None,
                    help="after the node checks, run each failed check's companion script (remediation/) "
                         "on its host over the same connection: 'plan' shows what it would change, "
                         "'apply' changes it and re-probes the host (needs --remediate-checks). "
                         "Default: never")
    group.addoption("--remediate-checks", dest="gpuconform_remediate_checks", metavar="IDS", default=None,
                    help="comma-separated check ids to remediate (e.g. node.sysctl,node.dkms.nvidia_installed), "
                         "or 'all'; required by --remediate=apply (default for plan: all)")
    group.addoption("--baseline", dest="gpuconform_baseline", metavar="JSON", default=None,
                    help="JSON results of the last accepted run: the report opens with what changed since "
                         "(newly failing/passing checks, hosts added/removed, platform facts)")
    group.addoption("--fail-on-drift", dest="gpuconform_fail_on_drift", metavar="KINDS", default=None,
                    help="comma-separated drift kinds that make the run REJECTED (exit 1), or 'all' (every kind "
                         "but newly_passing, which fails a run only when named): newly_failing, newly_passing, "
                         "hosts_added, hosts_removed, driver, fabric_manager, gpu_model, gpu_count, mig, kernel, "
                         "kubernetes, gpu_operator, kubeflow (default: drift alone fails nothing; needs --baseline)")
    group.addoption("--force-baseline", dest="gpuconform_force_baseline", action="store_true", default=False,
                    help="compare with --baseline even though that run was not ACCEPTED (the report says so)")
    group.addoption("--ai-conformance", dest="gpuconform_ai_conformance", metavar="DIR", default=None,
                    help="write DIR/PRODUCT.yaml for the CNCF Kubernetes AI Conformance program: the profile's "
                         "ai_conformance.product and checklist, each requirement's status from its checks "
                         "(-m aiconformance runs them) or the profile, the run's reports as evidence "
                         "(gpuconform/aiconformance/README.md) (default: none written)")
    group.addoption("--kubeconfig", dest="gpuconform_kubeconfig", metavar="PATH", default=None,
                    help="kubeconfig of the cluster under test (default: $KUBECONFIG, in-cluster "
                         "config when run in a pod, else ~/.kube/config)")
    group.addoption("--context", dest="gpuconform_context", metavar="NAME", default=None,
                    help="kubeconfig context to use (default: the current context)")
    group.addoption("--keep-on-failure", dest="gpuconform_keep_on_failure", action="store_true",
                    help="keep the run's namespace and failed pods when a cluster check fails "
                         "(remove later: python -m gpuconform.cluster.sweep)")
    OWN_OPTIONS.update(name for option in group.options for name in option.names())


def stray_option_value(config: pytest.Config) -> str | None:
    """A profile or report path that pytest took for a test path (``--profile X`` without '=')."""
    return next((a for a in config.args if a.split("::")[0].endswith((".yaml", ".yml", "reports"))), None)


def suite_root(config: pytest.Config) -> Path | None:
    """The conformance suite's folder (pytest's rootdir) when pytest runs it, else None."""
    if is_suite(config.rootpath):
        return config.rootpath
    if config.inipath is None and is_suite(config.invocation_params.dir):
        # pytest takes its rootdir from the paths on the command line, option values given with a
        # space included (``--profile /elsewhere/p.yaml``): the suite's settings were not read
        raise pytest.UsageError(f"pytest took {config.rootpath} for the rootdir, from an option value "
                                f"given with a space: write options with '=' (--profile=PATH)")
    return None


def _interrupt(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    stray = stray_option_value(config)
    if stray:
        raise pytest.UsageError(f"pytest took {stray} for a test path: write the option with '=' "
                                f"(--profile={stray}, --report-dir=DIR)")
    suite = suite_root(config)
    if suite is None:  # loaded by entry point into another project's run: stay inert
        own = next((a for a in config.invocation_params.args if str(a).split("=", 1)[0] in OWN_OPTIONS), None)
        if own is not None:  # ... unless that run asks for the suite (issue #25: exit 5, "no tests ran")
            raise pytest.UsageError(f"{own}: no gpuconform checks here ({config.rootpath} is not the suite's "
                                    f"folder): run them with `gpuconform run {own} …`, or pytest in a checkout")
        return
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    run_inputs = inputs.read(config, suite)  # every input, checked once (one line, exit 4)
    config.stash[keys.INPUTS] = run_inputs
    config.stash[keys.PROFILE] = run_inputs.profile
    config.pluginmanager.register(hosts, "gpuconform-hosts")
    config.pluginmanager.register(fixtures, "gpuconform-fixtures")
    config.pluginmanager.register(fixtures.run_fixtures(config), "gpuconform-run-fixtures")
    # SIGTERM ends the run as Ctrl-C does (probes ended, cleanup run, report of what finished
    # written), from before the first probe
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)
    fixtures.start_probes(config)
    # imported once the probes run: a small run's start is its fixed cost (issue #27)
    from gpuconform.plugin import (aiconformance, cluster_fixtures, direct, distribution, heap,  # noqa: PLC0415
                                   hooks, k8s_node_fixtures, remediation_fixtures, reporting)
    if run_inputs.remediate is not None:  # its session fixture exists only then: no item pays for it otherwise
        config.stash[remediation_fixtures.REMEDIATOR] = remediation_fixtures.Remediator(*run_inputs.remediate)
        config.pluginmanager.register(remediation_fixtures, "gpuconform-remediation-fixtures")
    config.pluginmanager.register(distribution, "gpuconform-distribution")
    config.pluginmanager.register(direct, "gpuconform-direct")
    config.pluginmanager.register(heap, "gpuconform-heap")
    config.pluginmanager.register(cluster_fixtures, "gpuconform-cluster-fixtures")
    config.pluginmanager.register(cluster_fixtures.run_fixtures(config), "gpuconform-cluster-run-fixtures")
    config.pluginmanager.register(k8s_node_fixtures, "gpuconform-k8s-node-fixtures")
    config.pluginmanager.register(hooks.Hooks(config, run_inputs), "gpuconform-hooks")
    reports = reporting.Reports(config, run_inputs)
    config.pluginmanager.register(reports, "gpuconform-reports")
    config.pluginmanager.register(aiconformance.Export(config, reports, run_inputs.profile, run_inputs.ai_conformance),
                                  "gpuconform-ai-conformance")
    config.pluginmanager.register(hooks.OneLineReports(), "gpuconform-one-line-reports")
    config.pluginmanager.register(reporting.ReportFiles(config), "gpuconform-report-files")
