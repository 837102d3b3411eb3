"""The report's parts on their own: waivers, verdict rules, MIG placement, retries, schema, and
the one-line errors of a bad waiver file (a real suite run that stops at configuration)."""
from __future__ import annotations

import datetime as dt
import json
import re

import pytest

from gpuconform.layers import CHECK_LAYERS
from gpuconform.redact import MASK, redact
from gpuconform.report import html, mig_svg, model, waivers
from report_harness import REPO, run

TODAY = dt.date(2026, 11, 30)


def record(**kw) -> dict:
    base = {"check_id": "node.dkms.nvidia_installed", "param": None, "title": "t", "rule": "r", "layer": "node",
            "host": "gpu-1", "verdict": "fail", "message": "m", "evidence": "", "remediation": None,
            "blocked_by": None, "retries": 0, "waiver": None, "nodeid": "n", "anchor": "r-0", "duration": 0.0}
    return {**base, **kw}


def waiver_list(*items) -> tuple:
    return waivers.WaiverFile.model_validate({"waivers": list(items)}).waivers


W = {"check": "node.dkms.*", "host": "gpu-*", "reason": "rebuild planned", "owner": "ops"}


def test_waiver_matches_glob_id_param_and_host():
    ws = waiver_list({**W, "expires": "2026-12-31"},
                     {**W, "check": "node.kernel.cmdline_required[module.sig_enforce=0]", "expires": "2026-12-31"})
    assert waivers.match(ws, "node.dkms.nvidia_installed", None, "gpu-1", TODAY)["index"] == 0
    assert waivers.match(ws, "node.dkms.nvidia_installed", None, "cpu-1", TODAY) is None
    assert waivers.match(ws, "node.kernel.cmdline_required", "module.sig_enforce=0", "gpu-1", TODAY)["index"] == 1
    assert waivers.match(ws, "node.kernel.cmdline_required", "rd.driver.blacklist=nouveau", "gpu-1", TODAY) is None


def test_waiver_holds_through_its_expiry_day_and_a_valid_one_wins():
    ws = waiver_list({**W, "expires": "2026-11-29"}, {**W, "expires": "2026-11-30"})
    ref = waivers.match(ws, "node.dkms.x", None, "gpu-1", TODAY)
    assert (ref["index"], ref["status"]) == (1, "valid")
    assert waivers.match(ws[:1], "node.dkms.x", None, "gpu-1", TODAY)["status"] == "expired"


def test_overall_verdict_rules():
    ok = [record(verdict="pass"), record(verdict="waived"), record(verdict="skip")]
    assert model.overall(ok, [], {"node"}).word == model.ACCEPTED
    # blocked is never judged: a run whose checks are blocked by a prerequisite it did not even
    # select (-m aiconformance without cluster.api.reachable, the API server down) is no pass
    blocked = model.overall(ok + [record(verdict="blocked")] * 5, [], {"cluster"})
    assert blocked.word == model.REJECTED and blocked.reasons == ["5 blocked (not judged: a lower check did not pass)"]
    assert model.overall(ok + [record(verdict="error")], [], {"node"}).word == model.REJECTED
    assert model.overall(ok + [record(verdict="fail")], [], {"node"}).word == model.REJECTED
    expired = [{"index": 0, "check": "x", "host": "*", "expires": "2020-01-01", "status": "expired"}]
    assert model.overall(ok, expired, {"node"}).word == model.REJECTED
    assert model.overall([], [], set()).reasons == ["no check ran"]
    assert model.overall(ok, [], {"node"}).partial and not model.overall(ok, [], set(CHECK_LAYERS)).partial


def test_pass_after_retries_is_kept_apart():
    r = record(verdict="pass", retries=2)
    assert html.verdict_text(r) == "PASS after 2 retries" and html.shown_verdict(r) == "retried"
    assert html.verdict_text(record(verdict="pass")) == "PASS"
    doc = {"results": [r, record(verdict="pass", host="gpu-2")]}
    cells = re.findall(r'<td class="v-(\w+)">(?:<a [^>]*>)?(\w)<', html.matrix(doc))
    assert sorted(cells) == [("pass", "P"), ("retried", "R")]
    # a clean pass is a bare letter, left out of the results table; a pass after retries is listed
    assert html.listed(r) and not html.listed(doc["results"][1])


@pytest.mark.parametrize("profiles, layout", [
    (["1g.10gb"] * 7, [("1g.10gb", i) for i in range(7)]),
    # all-balanced on H100: the 3g instance has to take the upper half for the rest to fit
    (["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"], [("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]),
    (["7g.80gb"], [("7g.80gb", 0)]),
    (["3g.40gb", "3g.40gb"], [("3g.40gb", 0), ("3g.40gb", 4)]),
])
def test_mig_placement_follows_nvidia_rules(profiles, layout):
    placed, unplaced = mig_svg.place(profiles, "NVIDIA H100 80GB HBM3")
    assert [(p, s) for p, s, _ in placed] == layout and not unplaced


def test_mig_overflow_is_named_and_the_picture_has_seven_slices():
    _, unplaced = mig_svg.place(["4g.40gb", "4g.40gb"], "")
    assert unplaced == ["4g.40gb"]
    svg = mig_svg.gpu_svg(0, "NVIDIA H100 80GB HBM3", ["1g.10gb"] * 7)
    assert svg.count('class="mig-instance"') == 7 and svg.count("<rect") == 7 + 7


def test_schema_file_is_generated_from_the_model(tmp_path):
    fresh = tmp_path / "schema.json"
    model.write_schema(fresh)
    kept = REPO / "gpuconform" / "report" / "results.schema.json"
    assert json.loads(kept.read_text()) == json.loads(fresh.read_text()), \
        "run: python -m gpuconform.report.model"


def test_url_credentials_are_masked():
    assert redact("https_proxy=http://svc:S3cretPass@proxy:3128") == f"https_proxy=http://svc:{MASK}@proxy:3128"
    assert redact('# mirror: password = "Xy12345"') == f'# mirror: password = {MASK}'
    assert redact("ssh://root@gpu-1") == "ssh://root@gpu-1"


@pytest.mark.parametrize("text, where", [
    ("waivers:\n  - check: node.x\n    reason: because\n    owner: me\n", "waivers.0.expires: Field required"),
    ("waivers:\n  - check: node.x\n    reason: because\n    owner: me\n    expires: soon\n", "waivers.0.expires:"),
    ("waivers:\n  - check: node.x\n    reason: because\n    owner: me\n    expires: 2026-01-01\n    ticket: 1\n",
     "waivers.0.ticket: unknown field (a typo?)"),
    ("- just a list\n", "expected a mapping with a `waivers:` list"),
])
def test_bad_waiver_file_is_one_usage_line(tmp_path, text, where):
    path = tmp_path / "waivers.yaml"
    path.write_text(text)
    r = run(tmp_path / "reports", "-m", "node", "--hosts=local://", f"--waivers={path}", timeout=60)
    assert r.proc.returncode == 4, r.output()
    lines = [x for x in r.proc.stderr.splitlines() if "waivers.yaml" in x]
    assert len(lines) == 1 and str(path) in lines[0] and where in lines[0], r.proc.stderr


def test_cluster_and_versions_reach_fingerprint_and_header(tmp_path):
    """What the cluster layer will add: the API server from its facts, versions noted by checks."""
    from types import SimpleNamespace

    from gpuconform.report.fingerprint import cluster_summary
    from gpuconform.report.record import redacted
    from gpuconform.report.run import RunReport

    facts = SimpleNamespace(version=lambda: {"gitVersion": "v1.31.4"},
                            cluster=SimpleNamespace(server="https://admin:S3cretPw@api.k8s-ml.bank.example:6443"))
    profile = SimpleNamespace(name="seed-h100", path="profiles/seed-h100.yaml", sha256="0" * 64)
    run_report = RunReport(profile, (), REPO, ("-m", "cluster"), "-m 'cluster'", TODAY)
    noted = redacted({"cluster": cluster_summary(facts), "gpu_operator_version": "v25.10.0"})  # as hooks.py does
    run_report.add(SimpleNamespace(gpuconform_record=record(layer="cluster", host=None, verdict="pass"),
                                   gpuconform_platform=noted))
    run_report.add(SimpleNamespace(gpuconform_platform={"kubeflow_version": "1.10.0"}))
    sha = run_report.write_json(tmp_path / "r.json")
    f = run_report.doc["fingerprint"]
    assert f["cluster"] == {"name": "https://admin:***@api.k8s-ml.bank.example:6443", "api_server_version": "v1.31.4",
                            "gpu_nodes": []}  # these facts list no node
    assert (f["gpu_operator_version"], f["kubeflow_version"]) == ("v25.10.0", "1.10.0")
    page = html.fingerprint_block(run_report.doc)
    for text in ("API server version", "v1.31.4", "GPU Operator", "v25.10.0", "Kubeflow", "1.10.0"):
        assert text in page
    assert len(sha) == 64 and run_report.doc["layers"]["cluster"]["pass"] == 1


def test_cluster_checks_about_nodes_get_their_own_matrix():
    from types import SimpleNamespace

    from gpuconform.report.record import host_of

    item = SimpleNamespace(callspec=SimpleNamespace(params={"gpu_node": "gpu-worker-1"}))
    assert host_of(item, None) == "gpu-worker-1"
    results = [record(layer="cluster", check_id="cluster.node.ready", param=f"gpu-worker-{i}",
                      host=f"gpu-worker-{i}", verdict="pass", anchor=f"r-{i}") for i in (1, 2)]
    results.append(record(layer="cluster", check_id="cluster.api.reachable", host=None, verdict="pass"))
    page = html.matrix({"results": results}, "cluster")
    assert re.findall(r'<tr data-check="([^"]+)">', page) == ["cluster.node.ready"]  # the node is the column
    assert len(re.findall(r'<th class="host"', page)) == 2 and 'id="gc-matrix-cluster"' in page
    assert html.matrix({"results": results}, "node") == ""


def test_drift_compares_only_what_both_runs_know():
    """A layer's hosts are compared only when it ran in both runs, a fact only when both know it;
    a new host's failures are "hosts added", not "newly failing"; waived → pass is newly passing."""
    from gpuconform.report import drift

    def doc(results, hosts=(), cluster=None, operator=None):
        return {"fingerprint": {"started": "2026-11-30T02:00:00+00:00", "hosts": list(hosts), "cluster": cluster,
                                "gpu_operator_version": operator},
                "verdict": {"word": "ACCEPTED"}, "results": results}
    before = doc([record(verdict="pass"), record(verdict="waived", check_id="node.sysctl"),
                  record(verdict="pass", host="gpu-2"), record(layer="cluster", host="w1", verdict="pass")],
                 hosts=[{"host": "gpu-1", "driver": "580.95.05", "kernel": "6.1"}, {"host": "gpu-2", "error": "x"}],
                 cluster={"gpu_nodes": [{"name": "w1", "mig_config": "all-1g.10gb"}]}, operator="v25.3.0")
    now = doc([record(verdict="fail"), record(verdict="pass", check_id="node.sysctl"),
               record(verdict="fail", host="gpu-3")],
              hosts=[{"host": "gpu-1", "driver": "580.95.05", "kernel": "6.2"}, {"host": "gpu-2", "driver": "570"}],
              operator="v25.10.0")
    d = drift.compare(before, now, "b.json", "0" * 64, ("kernel", "mig", "hosts_added"))
    assert [(c["check_id"], c["host"], c["was"]) for c in d["newly_failing"]] == [("node.dkms.nvidia_installed", "gpu-1", "pass")]
    assert [(c["check_id"], c["was"]) for c in d["newly_passing"]] == [("node.sysctl", "waived")]
    assert d["hosts_added"] == ["gpu-3"] and d["hosts_removed"] == ["gpu-2"]  # the cluster layer did not run now
    assert d["facts"] == [{"kind": "kernel", "host": "gpu-1", "was": "6.1", "now": "6.2"},
                          {"kind": "gpu_operator", "host": None, "was": "v25.3.0", "now": "v25.10.0"}]
    assert d["failing"] == ["kernel", "hosts_added"]
    assert model.overall(now["results"], [], {"node"}, drifted=tuple(d["failing"])).reasons[-1] == \
        "drift since the baseline (--fail-on-drift): kernel, hosts_added"
    assert drift.fail_on_kinds("all") == tuple(k for k in model.DRIFT_KINDS if k != "newly_passing")
    assert drift.fail_on_kinds("all,newly_passing") == model.DRIFT_KINDS and drift.fail_on_kinds("gpu-count") == ("gpu_count",)


def test_results_file_stores_each_check_once_and_reads_back_whole(tmp_path):
    """v4: a check's title, rule and layer once, in ``checks``; a result keeps what tells it apart
    (a pass: its target, verdict, evidence, node id and duration; a failure all it has); reading
    the file gives back every record whole, and a v3 file is still a baseline."""
    from types import SimpleNamespace

    from gpuconform.report import drift
    from gpuconform.report.run import RunReport

    profile = SimpleNamespace(name="seed-h100", path="profiles/seed-h100.yaml", sha256="0" * 64)
    run_report = RunReport(profile, (), REPO, ("-m", "node"), None, TODAY)
    rule = "The loaded NVIDIA driver is the version the profile names. " * 4

    def add(nodeid, **kw):
        kw.setdefault("anchor", model.anchor(nodeid))
        run_report.add(SimpleNamespace(gpuconform_record=record(nodeid=nodeid, **kw)))
    for i in (1, 2, 3):
        add(f"tests/node/test_driver.py::test_version[ssh://gpu-{i}]", check_id="node.driver.version",
            title="Driver version", rule=rule, host=f"gpu-{i}", verdict="pass", message="",
            evidence=f"$ nvidia-smi\n580.95.0{i}", duration=0.25)
    add("tests/node/test_driver.py::test_version[gpu-6]", check_id="node.driver.version", title="Driver version",
        rule=rule, param="gpu-6", host="gpu-6", verdict="pass", message="", evidence="")
    add("tests/node/test_dkms.py::test_installed[ssh://gpu-4]", host="gpu-4", evidence="$ dkms status\n",
        remediation="dkms install -m nvidia", retries=2)
    add("tests/node/other.py::test_t", check_id="node.driver.version", title="Other", rule=rule, host="gpu-5",
        verdict="skip", message="not in the profile", anchor="r-kept")
    run_report.write_json(tmp_path / "r.json")
    text = (tmp_path / "r.json").read_text()
    stored = json.loads(text)
    assert stored["schema"] == model.SCHEMA_ID == "gpuconform/results/v4" and text.count(rule) == 1
    assert stored["checks"]["node.driver.version"] == {"title": "Driver version", "rule": rule, "layer": "node",
                                                       "test": "tests/node/test_driver.py::test_version"}
    by_host = {r.get("host"): r for r in stored["results"]}
    assert by_host["gpu-1"] == {"check_id": "node.driver.version", "param": None, "host": "gpu-1", "verdict": "pass",
                                "evidence": "$ nvidia-smi\n580.95.01", "nodeid": "[ssh://gpu-1]", "duration": 0.25}
    assert stored["results"][-1] == {"check_id": "node.driver.version", "param": "gpu-6", "verdict": "pass",
                                     "duration": 0.0}  # its host is its param, its node id its check's test[param]
    assert by_host["gpu-4"]["nodeid"] == "tests/node/test_dkms.py::test_installed[ssh://gpu-4]"  # a failure: whole
    assert (by_host["gpu-4"]["remediation"], by_host["gpu-4"]["retries"], by_host["gpu-4"]["message"]) == \
        ("dkms install -m nvidia", 2, "m")
    assert (by_host["gpu-5"]["title"], by_host["gpu-5"]["anchor"], by_host["gpu-5"]["nodeid"]) == \
        ("Other", "r-kept", "tests/node/other.py::test_t")
    assert model.read(text) == run_report.doc  # nothing lost
    (tmp_path / "v3.json").write_text(json.dumps({**run_report.doc, "schema": "gpuconform/results/v3"}))
    for name in ("r.json", "v3.json"):
        doc, _ = drift.load_baseline(str(tmp_path / name), force=True)  # the run failed: forced
        assert doc["results"] == run_report.doc["results"], name
    stored["results"][0]["check_id"] = "node.unknown"
    (tmp_path / "bad.json").write_text(json.dumps(stored))
    with pytest.raises(drift.BaselineError, match="not in checks"):
        drift.load_baseline(str(tmp_path / "bad.json"), force=True)
