"""The probe is fed by the profile: a host whose container toolkit the GPU Operator installed
(``toolkit-from-operator``: /usr/local/nvidia/toolkit) passes under a profile that says so, and
fails under the seed profile (expected.py) with messages naming both paths."""
from __future__ import annotations

import yaml

from expected import Expect
from harness import PROFILE, assert_scenario, by_scenario
from runner import run_suite

HOST = "toolkit-from-operator"
TOOLKIT_RUNTIME = "/usr/local/nvidia/toolkit/nvidia-container-runtime"


def test_a_profile_naming_the_operators_toolkit_passes_that_host(ssh_nodes, tmp_path):
    data = yaml.safe_load(PROFILE.read_text())
    # the group is how a pool of such hosts is declared; nvidia-ctk is in the toolkit folder, off PATH
    data["groups"].append({"match": [HOST], "node": {"container_runtime": {
        "runtime_binary": TOOLKIT_RUNTIME, "nvidia_ctk_required": False}}})
    profile = tmp_path / "operator-toolkit.yaml"
    profile.write_text(yaml.safe_dump(data))
    proc, doc = run_suite("-m", "node", "-q", f"--profile={profile}", f"--hosts=ssh://root@{HOST}",
                          f"--ssh-config={ssh_nodes.ssh_config}", report_dir=tmp_path / "reports", timeout=300)
    assert doc, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = by_scenario(doc["results"])[HOST]
    assert_scenario(f"{HOST} under a profile naming {TOOLKIT_RUNTIME}", results,
                    Expect(skipped=frozenset({"node.toolkit.nvidia_ctk"})))
    passed = {r["check_id"] for r in results if r["verdict"] == "pass"}
    assert {"node.toolkit.runtime_binary", "node.containerd.nvidia_runtime", "node.containerd.nvidia_default"} <= passed
    assert proc.returncode == 0, proc.stdout[-3000:]
