"""The report of a cluster run draws the cluster's GPU nodes: their MIG layout from their labels,
in the MIG picture and the JSON fingerprint (no SSH to them)."""
from __future__ import annotations

import re

from cluster_harness import PROFILE
from runner import run_suite

#: the bed's three workers (testbed/cluster/platform.py ARTICLE_WORKERS), one per MIG layout
LAYOUTS = {"gpu-worker-1": "all-1g.10gb", "gpu-worker-2": "all-balanced", "gpu-worker-3": "all-disabled"}


def test_report_draws_the_gpu_nodes_by_their_mig_labels(platform, tmp_path):
    proc, doc = run_suite("-m", "cluster", "-q", "-k", "gpu_labels or mig_config_label", f"--profile={PROFILE}",
                          f"--kubeconfig={platform.kubeconfig}", report_dir=tmp_path, timeout=300)
    assert doc, proc.stdout[-3000:] + proc.stderr[-3000:]
    nodes = {n["name"]: n for n in doc["fingerprint"]["cluster"]["gpu_nodes"]}
    assert {name: n["mig_config"] for name, n in nodes.items()} == LAYOUTS
    assert all(n["gpu_count"] == 8 and n["mig_state"] == "success" for n in nodes.values())
    assert nodes["gpu-worker-1"]["mig_devices"] == ["1g.10gb"] * 7 and nodes["gpu-worker-3"]["mig_devices"] is None
    page = next(tmp_path.glob("*.html")).read_text()
    mig = page[page.index('id="gc-mig"'):]
    pictures = {re.match(r"<h4>([^<]*)", p).group(1): p for p in mig.split('<div class="mig-node">')[1:]}
    assert sorted(pictures) == ["gpu-worker-1 — all-1g.10gb ", "gpu-worker-2 — all-balanced "]
    one_g = pictures["gpu-worker-1 — all-1g.10gb "]
    assert one_g.count('aria-label="GPU ') == 8 and one_g.count('data-profile="1g.10gb"') == 8 * 7
    assert 'data-mig-config="all-disabled" data-nodes="1"' in mig
