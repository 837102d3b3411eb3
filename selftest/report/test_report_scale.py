"""The report under load: xdist workers (written once, by the controller) and 100 hosts."""
from __future__ import annotations

import html
import json
import re

import pytest

from report_harness import dump_dom, hosts_arg, run, screenshot, with_probe

#: Appended to a copy of the page: scrolls the matrix and records where its headers are then.
STICKY_PROBE = """<script>window.addEventListener('load', function () {
  var w = document.querySelector('.gc-matrix-wrap');
  w.scrollIntoView();  // the matrix is laid out once it comes near the view (content-visibility)
  setTimeout(function () {
  w.scrollTop = 300; w.scrollLeft = 600;
  var box = w.getBoundingClientRect();
  var head = document.querySelector('#gc-matrix thead th.host').getBoundingClientRect();
  var check = document.querySelector('#gc-matrix tbody th.check').getBoundingClientRect();
  document.body.setAttribute('data-sticky', JSON.stringify({scrollTop: w.scrollTop, scrollLeft: w.scrollLeft,
    boxTop: box.top, boxLeft: box.left, headTop: head.top, checkLeft: check.left}));
  }, 200);
});</script>"""

MIX = ("gpu-good", "gpu-good", "good-mig", "dkms-added", "gpu-good", "containerd-not-default",
       "gpu-good", "sig-enforce-blocks-driver", "gpu-good", "nouveau-loaded")


def test_xdist_writes_one_report_from_all_workers(host_roots, tmp_path):
    roots = [host_roots[n] for n in ("gpu-good", "good-mig", "dkms-added", "nouveau-loaded")]
    serial = run(tmp_path / "serial", "-m", "node", *hosts_arg(roots))
    par = run(tmp_path / "xdist", "-m", "node", "-n", "4", *hosts_arg(roots),
              f"--junitxml={tmp_path / 'xdist' / 'junit.xml'}")
    assert par.doc is not None, par.output()
    assert sorted(p.suffix for p in (tmp_path / "xdist").iterdir()) == [".html", ".json", ".xml"]

    def key(doc):
        return sorted((r["nodeid"], r["verdict"]) for r in doc["results"])
    assert key(par.doc) == key(serial.doc)
    assert [h["host"] for h in par.doc["fingerprint"]["hosts"]] == sorted(str(r) for r in roots)
    page = par.html.read_text()
    assert len(re.findall(r'<td class="v-', page)) == len(par.doc["results"])
    assert page.count('id="gc-signoff"') == 1
    assert len(re.findall(r"<properties>", par.junit.read_text())) == len(par.doc["results"])


@pytest.fixture(scope="module")
def hundred(host_roots, tmp_path_factory):
    """100 hosts (links to the showcase roots) × every node check. Serial on purpose: each xdist
    worker probes every host at session start, so on a small machine `-n 2` doubles the probes."""
    tmp_path = tmp_path_factory.mktemp("hundred")
    farm = tmp_path / "farm"
    farm.mkdir()
    roots = []
    for i in range(100):
        link = farm / f"gpu-{i + 1:03d}"
        link.symlink_to(host_roots[MIX[i % len(MIX)]])
        roots.append(link)
    r = run(tmp_path / "reports", "-m", "node", *hosts_arg(roots), timeout=300)
    assert r.doc is not None, r.output()
    return r


def test_hundred_hosts_stay_readable(hundred, tmp_path):
    r = hundred
    doc = r.doc
    assert len(doc["fingerprint"]["hosts"]) == 100
    checks = {(x["check_id"], x["param"]) for x in doc["results"]}
    assert len(checks) >= 30 and len(doc["results"]) == 100 * len(checks)
    dom = r.html.read_text()  # the summary fragments are static HTML; the browser only takes the picture
    assert len(re.findall(r'<th class="host" title=', dom)) == 100
    assert len(re.findall(r'<td class="v-', dom)) == len(doc["results"])
    header = re.findall(r'<th class="host" title="[^"]+">([^<]+)</th>', dom)
    assert header[:3] == ["gpu-001", "gpu-002", "gpu-003"] and header[-1] == "gpu-100"  # short, natural order
    # one MIG picture for the 10 MIG hosts that share a layout
    assert dom.count('class="mig-host"') == 1
    screenshot(r.html, tmp_path / "hundred-hosts.png", "1400,1200")


def test_matrix_headers_stick_when_it_scrolls(hundred, tmp_path):
    """In the browser: scrolled down and right, the host row and the check column stay in view."""
    page = tmp_path / "probe.html"
    page.write_text(with_probe(hundred.html.read_text(), STICKY_PROBE))
    dom = dump_dom(page)
    at = json.loads(html.unescape(re.search(r'data-sticky="([^"]+)"', dom).group(1)))
    assert at["scrollTop"] > 0 and at["scrollLeft"] > 0, at  # the matrix did scroll both ways
    assert abs(at["headTop"] - at["boxTop"]) <= 2 and abs(at["checkLeft"] - at["boxLeft"]) <= 2, at
