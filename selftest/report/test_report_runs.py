"""Runs whose report must say what they were: a partial run with its failures waived, a pass after retries."""
from __future__ import annotations

import os
from pathlib import Path

from report_harness import hosts_arg, run


def test_partial_run_with_every_failure_waived_is_accepted(host_roots, tmp_path):
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text('waivers:\n  - check: "node.dkms.*"\n    host: "*"\n    reason: rebuild in the next window\n'
                       "    owner: platform-team\n    expires: 2099-12-31\n")
    host = tmp_path / "worker-a"  # a name -k cannot match
    host.symlink_to(host_roots["dkms-added"])
    r = run(tmp_path / "reports", "-m", "node", "-k", "test_dkms", *hosts_arg([host]), f"--waivers={waivers}")
    doc = r.doc
    assert doc is not None, r.output()
    assert doc["fingerprint"]["selection"] == "-m 'node' -k 'test_dkms'"
    assert {"node.dkms.nvidia_installed", "node.toolchain.ld_runs"} <= {x["check_id"] for x in doc["results"]}
    assert not any(x["check_id"].startswith("node.gpu.") for x in doc["results"])
    assert doc["counts"]["waived"] >= 1 and doc["counts"]["fail"] == doc["counts"]["error"] == 0
    assert doc["verdict"] == {"word": "ACCEPTED", "reasons": [], "partial": True}
    page = r.html.read_text()
    assert 'class="gc-verdict accepted">ACCEPTED</div>' in page and "partial run: node layer only" in page
    assert "gpuconform: ACCEPTED" in r.proc.stdout
    assert r.proc.returncode == 0, "an ACCEPTED run (failures all waived) exits 0"


def test_pass_after_retries_is_shown_apart(host_roots, tmp_path):
    here = str(Path(__file__).parent)
    r = run(tmp_path / "reports", "-m", "node", "-k", "test_nvidia_ctk_present or test_runtime_binary",
            *hosts_arg([host_roots["gpu-good"]]), "-p", "retry_plugin",
            env={"PYTHONPATH": os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))})
    assert r.doc is not None, r.output()
    by_id = {x["check_id"]: x for x in r.doc["results"]}
    assert by_id["node.toolkit.nvidia_ctk"]["verdict"] == "pass" and by_id["node.toolkit.nvidia_ctk"]["retries"] == 2
    assert by_id["node.toolkit.runtime_binary"]["retries"] == 0
    page = r.page()
    assert '<td class="v-retried"><a href="#' in page and "PASS after 2 retries" in page
    assert "1 of the passes needed retries" in page


def test_collect_only_writes_no_report(tmp_path):
    r = run(tmp_path / "reports", "--co", "-q", "-m", "node", "--hosts=local://")
    assert r.proc.returncode == 0 and r.doc is None and r.html is None, r.output()
