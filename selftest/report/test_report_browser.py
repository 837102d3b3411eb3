"""The HTML report as a platform owner sees it: rendered by headless chromium from a real run of
the suite over simulated hosts, then read back from the DOM."""
from __future__ import annotations

import hashlib
import html as html_mod
import json
import os
import re
import shutil

import pytest

from report_harness import REPO, SECRETS, dump_dom, hosts_arg, page_passes, run, screenshot, with_probe

WAIVERS = """\
waivers:
  - check: node.dkms.nvidia_installed
    host: "*/dkms-added"
    reason: DKMS rebuild scheduled in the next maintenance window
    owner: platform-team
    expires: 2099-12-31
  - check: "node.nouveau.*"
    host: "*/nouveau-loaded"
    reason: reboot postponed by the business
    owner: ml-ops
    expires: 2020-01-31
  - check: node.gpu.count
    host: "*/decommissioned-*"
    reason: host left the pool
    owner: platform-team
    expires: 2099-12-31
"""
#: a matrix cell: a linked letter (anything but a clean pass) or a bare P
CELL = re.compile(r'<td class="v-(\w+)"(?: title="[^"]*")?>(?:<a href="#(r-[0-9a-f]+)"[^>]*>)?(\w)(?:</a>)?</td>')


@pytest.fixture(scope="module")
def showcase(host_roots, tmp_path_factory):
    """One node run over the showcase hosts plus the leaky one, with waivers, JUnit and a secret
    in the command line; the HTML rendered by chromium."""
    folder = tmp_path_factory.mktemp("showcase")
    waivers = folder / "waivers.yaml"
    waivers.write_text(WAIVERS)
    r = run(folder / "reports", "-m", "node", *hosts_arg(host_roots.values()), f"--waivers={waivers}",
            f"--junitxml={folder / 'reports' / 'junit.xml'}", "--signoff-approver=Jane Doe",
            "--signoff-role=Head of ML Platform",
            "--metadata", "proxy", f"http://svc:{SECRETS['proxy']}@proxy.bank.example:3128")
    assert r.doc is not None and r.html is not None, r.output()
    r.dom = dump_dom(r.html)
    return r


def by(doc, check_id, host_end):
    return next(x for x in doc["results"] if x["check_id"] == check_id and x["host"].endswith(host_end))


def test_overall_verdict_is_at_the_top(showcase):
    dom = showcase.dom
    word = showcase.doc["verdict"]["word"]
    assert word == "REJECTED"  # failures, and an expired waiver
    assert re.search(rf'<div id="gc-verdict" class="gc-verdict rejected">{word}</div>', dom)
    assert dom.index('id="gc-verdict"') < dom.index('id="gc-matrix"') < dom.index('id="results-table"')
    assert "partial run: node layer only" in dom


def test_layer_counts_match_the_results(showcase):
    doc, dom = showcase.doc, showcase.dom
    row = re.search(r'<tr data-layer="node">(.*?)</tr>', dom).group(1)
    shown = dict(re.findall(r'data-verdict="(\w+)">(\d+)<', row))
    assert {k: int(v) for k, v in shown.items()} == doc["layers"]["node"]
    assert sum(doc["counts"].values()) == len(doc["results"]) > 0
    for layer in ("cluster", "kubeflow"):
        assert re.search(rf'<tr data-layer="{layer}">.*?not run</td></tr>', dom)


def test_matrix_has_one_cell_per_result_linked_unless_a_clean_pass(showcase):
    doc, dom = showcase.doc, showcase.dom
    matrix = dom[dom.index('id="gc-matrix"'):]
    matrix = matrix[:matrix.index("</table>")]
    hosts = re.findall(r'<th class="host" title="([^"]+)">', matrix)
    node = [x for x in doc["results"] if x["layer"] == "node"]
    by_cell = {(x["check_id"] + (f"[{x['param']}]" if x["param"] else ""), x["host"]): x for x in node}
    letters = {"pass": "P", "fail": "F", "error": "E", "skip": "S", "blocked": "B", "waived": "W"}
    seen = 0
    for key, row in re.findall(r'<tr data-check="([^"]+)"><th class="check"[^>]*>[^<]*</th>(.*?)</tr>', matrix):
        for host, (cls, anchor, letter) in zip(hosts, CELL.findall(row)):
            rec = by_cell[(key.replace("&amp;", "&"), host)]
            seen += 1
            assert (cls, letter) == (rec["verdict"], letters[rec["verdict"]])
            if rec["verdict"] in ("pass", "skip"):  # a bare letter; its row is not in the results table
                assert anchor == "" and f'<a id="{rec["anchor"]}"></a>' not in dom
            else:  # links to its result row, rendered by pytest-html's script
                assert anchor == rec["anchor"] and f'<a id="{anchor}"></a>' in dom
    assert seen == len(node)
    assert len(hosts) == len({x["host"] for x in node}) == len(doc["fingerprint"]["hosts"])
    # the results table lists every result but the clean passes and the profile's skips of host checks
    matrix_only = [x for x in doc["results"] if x.get("host") and x["layer"] in ("node", "cluster")
                   and (x["verdict"] == "skip" or (x["verdict"] == "pass" and not x["retries"]))]
    assert dom.count('class="col-check"') == len(doc["results"]) - len(matrix_only)
    # pytest-html's counts, corrected by the page's script, still count every result
    hidden = len(matrix_only)
    run_count = r'<p class="run-count">(\d+) tests'
    static = int(re.search(run_count, showcase.page()).group(1))
    assert int(re.search(run_count, dom).group(1)) == static + hidden
    passed = sum(x["verdict"] == "pass" for x in doc["results"])
    assert re.search(rf'<span class="passed">{passed} Passed \(\d+ in the matrix only\),</span>', dom)


def test_result_details_show_rule_evidence_remediation_and_blocker(showcase):
    doc, dom = showcase.doc, showcase.dom
    fail = by(doc, "node.containerd.nvidia_default", "/containerd-not-default")
    assert fail["verdict"] == "fail" and fail["remediation"] and fail["evidence"].startswith("$ ")
    block = re.search(rf'<dl class="gc-detail" data-anchor="{fail["anchor"]}">(.*?)</dl>', dom, re.S).group(1)
    for label in ("Rule", "Expected vs actual", "Evidence", "Remediation"):
        assert f"<dt>{label}</dt>" in block
    blocked = [x for x in doc["results"] if x["verdict"] == "blocked" and x["host"].endswith("/sig-enforce-blocks-driver")]
    assert blocked and all(x["blocked_by"] for x in blocked)
    b = re.search(rf'<dl class="gc-detail" data-anchor="{blocked[0]["anchor"]}">(.*?)</dl>', dom, re.S).group(1)
    assert f'<dt>Blocked by</dt><dd><span class="gc-mono">{blocked[0]["blocked_by"]}</span>' in b


def test_waivers_valid_expired_and_unmatched(showcase):
    doc, dom = showcase.doc, showcase.dom
    waived = by(doc, "node.dkms.nvidia_installed", "/dkms-added")
    assert waived["verdict"] == "waived" and waived["waiver"]["status"] == "valid"
    expired = [x for x in doc["results"] if x["host"].endswith("/nouveau-loaded") and x["waiver"]]
    assert expired and all(x["verdict"] == "fail" and x["waiver"]["status"] == "expired" for x in expired)
    states = [(w["status"], w["matched"]) for w in doc["waivers"]]
    assert states[0] == ("valid", 1) and states[1][0] == "expired" and states[1][1] >= 1 and states[2] == ("valid", 0)
    assert any("expired on 2020-01-31" in reason for reason in doc["verdict"]["reasons"])
    rows = re.findall(r'<tr class="waiver-(\w+)" data-status="\w+" data-matched="(\d+)">', dom)
    assert rows == [(s, str(m)) for s, m in states]
    assert "matched nothing" in dom and "expired — its failures stay failures" in dom
    assert '<td class="v-waived"><a href="#' in dom
    assert "DKMS rebuild scheduled in the next maintenance window" in dom


def test_signoff_hash_ties_the_page_to_the_json(showcase):
    dom = showcase.dom
    sha = hashlib.sha256(showcase.json.read_bytes()).hexdigest()
    assert f'<span class="gc-mono" id="gc-json-sha256">{sha}</span>' in dom
    # the block is moved to the end of the page, after the results table
    assert dom.index('id="results-table"') < dom.index('id="gc-signoff"')
    signoff = dom[dom.index('id="gc-signoff"'):]
    for label in ("Approver name", "Role", "Date", "Signature"):
        assert f"<td>{label}</td>" in signoff
    assert "Jane Doe" in signoff and "Head of ML Platform" in signoff


def test_signoff_is_reached_from_the_first_screen_with_every_fingerprint(showcase):
    """A link at the top leads to the block, which carries the profile's sha256, the suite's commit
    and the results file's sha256 together; printed, it starts a page of its own (issue #25)."""
    dom, f = showcase.dom, showcase.doc["fingerprint"]
    assert dom.index('id="gc-signoff-link"') < dom.index('id="gc-fix"')
    assert '<a href="#gc-signoff">Sign-off ↓</a>' in dom[dom.index('id="gc-signoff-link"'):][:200]
    block = dom[dom.index('id="gc-signoff"'):]
    sha = hashlib.sha256(showcase.json.read_bytes()).hexdigest()
    ties = block[block.index('id="gc-signoff-ties"'):block.index("</table>")]
    assert f'id="gc-profile-sha256">{f["profile_sha256"]}<' in ties and f'id="gc-json-sha256">{sha}<' in ties
    assert f'id="gc-commit">{f["git_commit"]}<' in ties and f["git_commit"]
    css = (REPO / "gpuconform" / "report" / "report.css").read_text()
    assert re.search(r"@media print \{[^@]*\.gc-signoff \{ page-break-before: always;", css)


def test_pytest_html_counters_agree_with_the_verdicts(showcase):
    """pytest counts a blocked check as skipped: the page says skip and blocked apart, with the
    JSON's counts (issue #25)."""
    counts = showcase.doc["counts"]
    assert counts["blocked"] and counts["skip"]
    label = re.search(r'<span class="skipped">([^<]*)</span>', showcase.dom).group(1)
    assert label == (f'{counts["skip"] + counts["blocked"]} Skipped ({counts["skip"]} skip, '
                     f'{counts["blocked"]} blocked),'), label


def test_fingerprint_names_profile_hosts_gpus_and_command(showcase):
    f, dom = showcase.doc["fingerprint"], showcase.dom
    profile = (REPO / "profiles" / "seed-h100.yaml").read_bytes()
    assert f["profile_sha256"] == hashlib.sha256(profile).hexdigest() and f["profile_sha256"] in dom
    mig = next(h for h in f["hosts"] if h["host"].endswith("/good-mig"))
    assert (mig["gpu_model"], mig["gpu_count"], mig["driver"]) == ("NVIDIA H100 80GB HBM3", 8, "580.95.05")
    assert mig["mig"].startswith("enabled")
    assert "--waivers=" in f["command"] and f["run_by"] and f["started"] <= f["finished"]
    assert f["selection"] == "-m 'node'"
    assert re.search(r'<table id="gc-hosts"', dom) and "NVIDIA H100 80GB HBM3" in dom


def test_mig_layout_is_drawn_per_gpu(showcase):
    dom = showcase.dom
    mig = dom[dom.index('id="gc-mig"'):dom.index('id="gc-mig"') + 200_000]
    blocks = mig.split('<div class="mig-host">')[1:]
    assert len(blocks) == 2  # good-mig and mig-mixed: two layouts
    all_1g = next(b for b in blocks if b.startswith("<h4>good-mig"))
    assert all_1g.count('aria-label="GPU ') == 8 and all_1g.count('data-profile="1g.10gb"') == 8 * 7
    mixed = next(b for b in blocks if b.startswith("<h4>mig-mixed"))
    gpus = mixed.split('aria-label="GPU ')[1:]
    assert [re.findall(r'data-profile="([^"]+)"', g) for g in gpus] == \
        [["2g.20gb", "1g.10gb", "1g.10gb", "3g.40gb"]] * 4 + [["7g.80gb"]] * 2 + [["4g.40gb", "3g.40gb"]] * 2
    assert "does not fit" not in mig


def test_no_secret_in_html_json_or_junit(showcase):
    texts = {"DOM": showcase.dom, "HTML": showcase.page_and_passes(), "JSON": showcase.json.read_text(),
             "JUnit": showcase.junit.read_text(), "terminal": showcase.proc.stdout}
    for where, text in texts.items():
        leaked = [name for name, secret in SECRETS.items() if secret in text]
        assert not leaked, f"{where} shows planted secrets: {leaked}"
    # they were there to leak: their masked shapes show where they were planted
    doc = showcase.doc
    evidence = by(doc, "node.containerd.nvidia_runtime", "/leaky")["evidence"]
    assert 'password = "***"' in evidence or "password = ***" in evidence
    assert "Bearer ***" in evidence and "oauth2_proxy_kubeflow=***" in evidence
    # the leaky host's passes carry it in the page's compressed pass block too, masked the same
    assert by(doc, "node.containerd.nvidia_runtime", "/leaky")["verdict"] == "pass"
    assert evidence in page_passes(showcase.page())["b"] or "Bearer ***" in json.dumps(page_passes(showcase.page()))
    assert "token=***" in next(h for h in doc["fingerprint"]["hosts"] if h["host"].endswith("/leaky"))["os"]
    assert "lockdown=password=***" in by(doc, "node.kernel.cmdline_forbidden", "/leaky")["message"]
    assert "svc:***@proxy" in doc["fingerprint"]["command"]


def test_junit_carries_check_host_and_verdict(showcase):
    junit = showcase.junit.read_text()
    props = re.findall(r'<properties>(.*?)</properties>', junit)
    assert len(props) == len(showcase.doc["results"])
    for p in props:
        names = re.findall(r'<property name="(\w+)"', p)
        assert names == ["check_id", "host", "verdict"]
    assert '<property name="verdict" value="waived" />' in junit
    assert "gpuconform" not in re.sub(r'<testcase[^>]*>', "", "".join(props))


def test_screenshot_is_kept(showcase, tmp_path_factory):
    out = tmp_path_factory.mktemp("artifacts")
    png = screenshot(showcase.html, out / "report.png", "1400,1800")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    if os.environ.get("GPUCONFORM_UPDATE_SCREENSHOT"):
        shutil.copy(png, REPO / "docs" / "report-screenshot.png")


#: Appended to a copy of the page: clicks the first P of the matrix, then records the pass panel.
PASS_CLICK = """<script>window.addEventListener('load', function () { setTimeout(function () {
  var td = document.querySelector('#gc-matrix td.v-pass'), row = td.parentNode;
  td.click();
  setTimeout(function () {
    var p = document.getElementById('gc-pass-panel');
    document.body.setAttribute('data-panel', JSON.stringify({hidden: p.hidden, check: p.dataset.check,
      host: p.dataset.host, rule: p.querySelector('.gc-rule').textContent,
      evidence: p.querySelector('.gc-evidence').textContent}));
  }, 500); }, 100); });</script>"""


def test_a_pass_shows_its_rule_and_evidence_on_a_click(showcase, tmp_path):
    """A clean pass has no row in the results table: a click on its P opens the pass panel with
    the rule and the evidence the JSON has for it."""
    page = tmp_path / "click.html"
    page.write_text(with_probe(showcase.html.read_text(), PASS_CLICK))
    dom = dump_dom(page)
    panel = json.loads(html_mod.unescape(re.search(r'data-panel="([^"]+)"', dom).group(1)))
    rec = next(x for x in showcase.doc["results"] if x["verdict"] == "pass" and x["host"] == panel["host"]
               and x["check_id"] + (f"[{x['param']}]" if x["param"] else "") == panel["check"])
    assert panel["hidden"] is False
    assert panel["rule"] == rec["rule"] and panel["evidence"] == rec["evidence"] and rec["evidence"]


def test_first_screen_says_what_must_be_fixed(showcase):
    """Before the matrix: the failed and could-not-check results grouped by check (hosts linked,
    one-line finding, fix); the environment table is moved below the results."""
    doc, dom = showcase.doc, showcase.dom
    order = [dom.index(x) for x in ('id="gc-verdict"', 'id="gc-fix"', 'id="gc-layers"', 'id="gc-matrix"',
                                    'id="results-table"', 'id="gc-environment"', 'id="gc-signoff"')]
    assert order == sorted(order)
    fix = dom[dom.index('id="gc-fix"'):dom.index('id="gc-layers"')]
    rows = re.findall(r'<tr data-check="([^"]+)" data-verdict="(\w+)" data-hosts="(\d+)">(.*?)</tr>', fix, re.S)
    want = {}
    for x in doc["results"]:
        if x["verdict"] in ("fail", "error"):
            key = (x["check_id"] + (f"[{x['param']}]" if x["param"] else ""), x["verdict"])
            want.setdefault(key, []).append(x)
    assert {(k.replace("&amp;", "&"), v): int(n) for k, v, n, _ in rows} == {k: len(v) for k, v in want.items()}
    key, verdict, _n, cells = next(r for r in rows if r[0] == "node.containerd.nvidia_default")
    rec = want[(key, verdict)][0]
    assert f'href="#{rec["anchor"]}"' in cells and rec["remediation"].splitlines()[0][:60] in html_mod.unescape(cells)
