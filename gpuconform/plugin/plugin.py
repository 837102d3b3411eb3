"""Wiring only: options, markers, and the modules that hold fixtures and hooks."""
from __future__ import annotations

import os

import pytest

from gpuconform.plugin import fixtures, hooks

MARKERS = {
    "node": "node (host) conformance checks",
    "cluster": "Kubernetes cluster conformance checks",
    "kubeflow": "Kubeflow conformance checks",
    "mig": "checks about MIG configuration",
    "disruptive": "checks that change the platform (opt-in)",
    "security": "security findings",
    "check(id, title, fix, needs, evidence)": "conformance check metadata",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("gpuconform", "gpuconform platform conformance")
    group.addoption("--profile", dest="gpuconform_profile", metavar="PATH",
                    default=os.environ.get("GPUCONFORM_PROFILE"),
                    help="platform profile YAML (default: $GPUCONFORM_PROFILE, else profiles/seed-h100.yaml)")
    group.addoption("--report-dir", dest="gpuconform_report_dir", metavar="DIR", default=None,
                    help="where HTML/JSON reports go (default: reports/ beside the suite)")
    group.addoption("--report-name", dest="gpuconform_report_name", metavar="NAME", default=None,
                    help="report file name without extension (default: <profile>-<UTC timestamp>)")
    group.addoption("--no-reports", dest="gpuconform_no_reports", action="store_true",
                    help="write no HTML/JSON report")


def stray_option_value(config: pytest.Config) -> str | None:
    """A profile or report path that pytest took for a test path (``--profile X`` without '=')."""
    return next((a for a in config.args if a.split("::")[0].endswith((".yaml", ".yml", "reports"))), None)


def suite_root(config: pytest.Config) -> bool:
    """Whether pytest runs the conformance suite (its rootdir holds tests/node)."""
    return (config.rootpath / "tests" / "node").is_dir()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    stray = stray_option_value(config)
    if stray:
        raise pytest.UsageError(f"pytest took {stray} for a test path: write the option with '=' "
                                f"(--profile={stray}, --report-dir=DIR)")
    if not suite_root(config):  # loaded by entry point into another project's run: stay inert
        return
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    config.pluginmanager.register(fixtures, "gpuconform-fixtures")
    config.pluginmanager.register(hooks.Hooks(config), "gpuconform-hooks")
