"""NVIDIA's own GPU Operator artifacts (the pinned module's assets and Helm chart, from the
bed's cache: testbed/gpuoperator/binaries.py), for unit tests that prove the cluster checks'
reading of them without a cluster. Nothing of them is copied into this repository."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml


@pytest.fixture(scope="session")
def gpu_operator_module() -> Path:
    """NVIDIA/gpu-operator's assets/, manifests/, deployments/ at the bed's pinned version."""
    from testbed.gpuoperator.binaries import module_dir
    return module_dir()


@pytest.fixture(scope="session")
def upstream_asset(gpu_operator_module):
    """``upstream_asset("state-mig-manager/0400_configmap.yaml")``: the first object of an asset."""
    return lambda rel: yaml.safe_load((gpu_operator_module / "assets" / rel).read_text())


@pytest.fixture(scope="session")
def render_cluster_policy():
    """``render_cluster_policy(**overrides)``: the ClusterPolicy a real Helm renders from the
    operator's chart with the article's values (testbed/gpuoperator/operator.py ARTICLE_VALUES)
    merged with ``overrides`` (Helm values)."""
    from testbed.gpuoperator import operator as bed_operator

    def render(**overrides) -> dict:
        objects = bed_operator.render(bed_operator.merge_values(bed_operator.ARTICLE_VALUES, overrides))
        return next(o for o in objects if o.get("kind") == "ClusterPolicy")
    return render
