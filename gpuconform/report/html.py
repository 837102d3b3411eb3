"""HTML fragments the plugin hands to pytest-html's hooks: verdict, fingerprint, summary by layer,
node × check matrix, MIG pictures, waivers, sign-off block, result-row cells and result details.

Everything here is built from the results document (``model.Results`` as a dict), whose text
was redacted when it entered the report; every value is HTML-escaped here.
"""
from __future__ import annotations

import os
import re
from collections import defaultdict
from html import escape

from gpuconform.report import mig_svg
from gpuconform.report.model import LAYERS, VERDICTS

LETTER = {"pass": "P", "retried": "R", "fail": "F", "error": "E", "skip": "S", "blocked": "B", "waived": "W"}
LABEL = {"pass": "pass", "retried": "pass after retries", "fail": "fail", "error": "error (could not check)",
         "skip": "skip", "blocked": "blocked", "waived": "waived"}


def shown_verdict(r: dict) -> str:
    """The verdict as shown: a pass after retries is kept apart from a clean pass."""
    return "retried" if r["verdict"] == "pass" and r.get("retries") else r["verdict"]


def verdict_text(r: dict) -> str:
    v = shown_verdict(r)
    if v == "retried":
        return f"PASS after {r['retries']} retr{'y' if r['retries'] == 1 else 'ies'}"
    return v.upper()


def badge(r: dict) -> str:
    return f'<span class="gc-badge v-{shown_verdict(r)}">{escape(verdict_text(r))}</span>'


def _natural(s: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s or "")]


def host_labels(hosts: list[str]) -> dict[str, str]:
    """Short column labels: hosts given as paths (chroot roots) lose their common folder."""
    if len(hosts) > 1 and all(h.startswith("/") for h in hosts):
        base = os.path.commonpath(hosts)
        return {h: os.path.relpath(h, base) if h != base else h for h in hosts}
    return {h: h for h in hosts}


def row_key(r: dict) -> str:
    """The check with its item; a cluster check's node is its host, not an item."""
    shown = r.get("param") is not None and r.get("param") != r.get("host")
    return r["check_id"] + (f"[{r['param']}]" if shown else "")


# -- top of the page ---------------------------------------------------------------------------
def verdict_block(doc: dict) -> str:
    v = doc["verdict"]
    scope = ""
    ran = [layer for layer in LAYERS if sum(doc["layers"].get(layer, {}).values())]
    if v["partial"]:
        layers = f'{escape(", ".join(ran) or "no")} layer{"s" if len(ran) != 1 else ""}'
        scope = f' <span class="gc-scope">(partial run: {layers} only)</span>'
    reasons = "".join(f"<li>{escape(x)}</li>" for x in v["reasons"])
    return (f'<div class="gc-section gc-top"><div id="gc-verdict" class="gc-verdict {v["word"].lower()}">'
            f'{v["word"]}</div>{scope}' + (f'<ul class="gc-reasons">{reasons}</ul>' if reasons else "") + "</div>")


def _kv(rows: list[tuple[str, str | None]]) -> str:
    return "".join(f'<tr><th>{escape(k)}</th><td class="gc-mono">{escape(str(v))}</td></tr>'
                   for k, v in rows if v not in (None, ""))


def fingerprint_block(doc: dict) -> str:
    f = doc["fingerprint"]
    cluster = f.get("cluster") or {}
    rows = [("Profile", f"{f['profile']}  ({f['profile_path']})"), ("Profile sha256", f["profile_sha256"]),
            ("Cluster", cluster.get("name")), ("API server version", cluster.get("api_server_version")),
            ("GPU Operator", f.get("gpu_operator_version")), ("Kubeflow", f.get("kubeflow_version")),
            ("Suite version", f["suite_version"]), ("Suite git commit", f.get("git_commit") or "unknown"),
            ("Run by", f["run_by"]), ("Started (UTC)", f["started"]), ("Finished (UTC)", f["finished"]),
            ("Selection", f.get("selection")), ("Command line", f["command"])]
    hosts = sorted(f.get("hosts") or [], key=lambda h: _natural(h["host"]))
    labels = host_labels([h["host"] for h in hosts])
    host_rows = "".join(
        f'<tr><td class="gc-mono" title="{escape(h["host"])}">{escape(labels[h["host"]])}</td>'
        f'<td>{escape(h.get("gpu_model") or "?")}</td>'
        f'<td class="num">{h.get("gpu_count") if h.get("gpu_count") is not None else "?"}</td>'
        f'<td>{escape(h.get("driver") or "?")}</td><td>{escape(h.get("mig") or "unknown")}</td>'
        f'<td>{escape(h.get("os") or "?")}</td><td>{escape(h.get("kernel") or "?")}</td>'
        f'<td>{escape(h.get("error") or "")}</td></tr>' for h in hosts)
    hosts_html = ""
    if hosts:
        common = os.path.commonpath([h["host"] for h in hosts]) if labels[hosts[0]["host"]] != hosts[0]["host"] else ""
        where = f' <small>(under <span class="gc-mono">{escape(common)}/</span>)</small>' if common else ""
        hosts_html = (f'<h4>Hosts: {len(hosts)}{where}</h4><div class="gc-hosts-scroll">'
                      '<table id="gc-hosts" class="gc-table"><thead><tr>'
                      "<th>Host</th><th>GPU model</th><th>GPUs</th><th>Driver</th><th>MIG</th><th>OS</th>"
                      f"<th>Kernel</th><th>Facts error</th></tr></thead><tbody>{host_rows}</tbody></table></div>")
    return (f'<div class="gc-section" id="gc-fingerprint"><h3>Platform fingerprint</h3>'
            f'<table class="gc-kv">{_kv(rows)}</table>{hosts_html}</div>')


def layer_summary(doc: dict) -> str:
    head = "".join(f'<th class="v-{v}">{escape(LABEL[v])}</th>' for v in VERDICTS)
    rows = []
    for layer in LAYERS:
        counts = doc["layers"].get(layer, {})
        total = sum(counts.values())
        cells = "".join(f'<td class="num" data-verdict="{v}">{counts.get(v, 0)}</td>' for v in VERDICTS)
        rows.append(f'<tr data-layer="{layer}"><th>{layer}</th>{cells}<td class="num">{total or "not run"}</td></tr>')
    total = "".join(f'<td class="num" data-verdict="{v}">{doc["counts"].get(v, 0)}</td>' for v in VERDICTS)
    retried = sum(1 for r in doc["results"] if shown_verdict(r) == "retried")
    note = f"<p>{retried} of the passes needed retries (shown R in the matrix).</p>" if retried else ""
    return (f'<div class="gc-section"><h3>Summary by layer</h3><table id="gc-layers" class="gc-table">'
            f'<thead><tr><th>Layer</th>{head}<th>Total</th></tr></thead><tbody>{"".join(rows)}'
            f'<tr data-layer="all"><th>all</th>{total}<td class="num">{len(doc["results"])}</td></tr>'
            f'</tbody></table>{note}</div>')


def matrix(doc: dict, layer: str = "node") -> str:
    """Rows: checks of ``layer`` about a host/node; columns: hosts; each cell links to its result."""
    node = [r for r in doc["results"] if r.get("layer") == layer and r.get("host")]
    if not node:
        return ""
    hosts = sorted({r["host"] for r in node}, key=_natural)
    labels = host_labels(hosts)
    cells: dict[str, dict[str, dict]] = defaultdict(dict)
    titles: dict[str, str] = {}
    for r in node:
        cells[row_key(r)][r["host"]] = r
        titles.setdefault(row_key(r), r["title"])
    head = "".join(f'<th class="host" title="{escape(h)}">{escape(labels[h])}</th>' for h in hosts)
    body = []
    for key in sorted(cells, key=_natural):
        tds = []
        for h in hosts:
            r = cells[key].get(h)
            if r is None:
                tds.append('<td class="cell none"></td>')
                continue
            v = shown_verdict(r)
            tip = f"{key} on {h}: {verdict_text(r)}" + (f" — {r['message']}" if r["message"] else "")
            tds.append(f'<td class="cell v-{v}" data-verdict="{v}" data-host="{escape(h)}">'
                       f'<a href="#{r["anchor"]}" title="{escape(tip[:300])}">{LETTER[v]}</a></td>')
        body.append(f'<tr data-check="{escape(key)}"><th class="check" title="{escape(titles[key])}">'
                    f'{escape(key)}</th>{"".join(tds)}</tr>')
    legend = "".join(f'<span><span class="gc-badge v-{v}">{LETTER[v]}</span> {escape(LABEL[v])}</span>'
                     for v in LETTER)
    what = "Node × check matrix" if layer == "node" else f"{layer.capitalize()} checks × Kubernetes node"
    table_id = "gc-matrix" if layer == "node" else f"gc-matrix-{layer}"
    return (f'<div class="gc-section"><h3>{what}</h3><p class="gc-legend">{legend} '
            f'— click a cell for its result.</p><div class="gc-matrix-wrap"><table id="{table_id}" class="gc-matrix">'
            f'<thead><tr><th class="check corner">check \\ host</th>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div></div>')


def mig_block(doc: dict) -> str:
    """One picture per distinct MIG layout, naming every host that has it."""
    groups: dict[str, list[str]] = {}
    for h in sorted(doc["fingerprint"].get("hosts") or [], key=lambda h: _natural(h["host"])):
        layout = [(g["index"], g["name"], tuple(g["mig_devices"])) for g in h.get("gpus") or []
                  if g.get("mig_mode") == "Enabled" or g.get("mig_devices")]
        if layout:
            groups.setdefault(repr(layout), []).append(h["host"])
    if not groups:
        return ""
    by_host = {h["host"]: h for h in doc["fingerprint"]["hosts"]}
    labels = host_labels(list(by_host))
    parts = []
    for hosts in groups.values():
        pic = mig_svg.host_svgs({**by_host[hosts[0]], "host": ", ".join(labels[h] for h in hosts)})
        parts.append(pic)
    return (f'<div class="gc-section" id="gc-mig"><h3>MIG layout</h3><p>Each GPU as its 7 compute slices, '
            f'MIG instances placed as NVIDIA\'s placement rules allow (reconstructed from <code>nvidia-smi -L</code>).'
            f'</p>{"".join(parts)}</div>')


def waivers_block(doc: dict) -> str:
    ws = doc.get("waivers") or []
    if not ws:
        return ""
    rows = []
    for w in ws:
        state = "expired — its failures stay failures" if w["status"] == "expired" else "valid"
        n = w["matched"]
        used = f"matched {n} failure{'s' if n != 1 else ''}" if n else "matched nothing"
        rows.append(f'<tr class="waiver-{w["status"]}" data-status="{w["status"]}" data-matched="{w["matched"]}">'
                    f'<td>{w["index"] + 1}</td><td class="gc-mono">{escape(w["check"])}</td>'
                    f'<td class="gc-mono">{escape(w["host"])}</td><td>{escape(w["reason"])}</td>'
                    f'<td>{escape(w["owner"])}</td><td>{escape(w["expires"])}</td><td>{escape(state)}</td>'
                    f'<td>{escape(used)}</td></tr>')
    return ('<div class="gc-section"><h3>Waivers</h3><table id="gc-waivers" class="gc-table"><thead><tr>'
            '<th>#</th><th>Check</th><th>Host</th><th>Reason</th><th>Owner</th><th>Expires</th><th>Status</th>'
            f'<th>Use</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def remediation_block(doc: dict) -> str:
    """--remediate: per host, each failed check → its script's outcome, with the script's output."""
    rs = doc.get("remediation") or []
    if not rs:
        return ""
    rows = []
    for r in rs:
        check = r["check_id"] + (f"[{r['param']}]" if r.get("param") else "")
        rows.append(f'<tr data-state="{escape(r["state"])}"><td class="gc-mono">{escape(r["host"])}</td>'
                    f'<td class="gc-mono">{escape(check)}</td><td class="gc-mono">{escape(r["script"])}</td>'
                    f'<td>failed → {escape(r["state"])}</td><td>{escape(r["reason"])}</td>'
                    f'<td><details><summary>output</summary><pre>{escape(r["output"])}</pre></details></td></tr>')
    mode = rs[0]["mode"]
    return (f'<div class="gc-section"><h3>Remediation (--remediate={mode})</h3>'
            '<p>The verdict above is the checks\' verdict before remediation; run the suite again to '
            'judge the fixed hosts.</p><table id="gc-remediation" class="gc-table"><thead><tr>'
            '<th>Host</th><th>Check</th><th>Script</th><th>Outcome</th><th>Why</th><th>Output</th>'
            f'</tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


def signoff_block(doc: dict, json_name: str, json_sha256: str, approver: str = "", role: str = "") -> str:
    """The block a platform owner signs; moved below the results table when the page loads."""
    def line(value: str) -> str:
        return f'<span class="line">{escape(value)}</span>'
    v = doc["verdict"]["word"]
    return (f'<div class="gc-signoff" id="gc-signoff"><h3>Sign-off</h3>'
            f'<p>Run verdict: <b>{v}</b>. Results file <span class="gc-mono">{escape(json_name)}</span>, '
            f'sha256 <span class="gc-mono" id="gc-json-sha256">{json_sha256}</span> — recompute it with '
            f'<code>sha256sum {escape(json_name)}</code> to tie this page to the run.</p><table>'
            f'<tr><td>Approver name</td><td>{line(approver)}</td></tr>'
            f'<tr><td>Role</td><td>{line(role)}</td></tr>'
            f'<tr><td>Date</td><td>{line("")}</td></tr>'
            f'<tr><td>Decision</td><td>{line("")} (accept / reject)</td></tr>'
            f'<tr><td>Signature</td><td>{line("")}</td></tr></table></div>'
            "<script>document.addEventListener('DOMContentLoaded', function () {"
            "var s = document.getElementById('gc-signoff'), t = document.getElementById('results-table');"
            "if (s && t) { t.parentNode.insertBefore(s, t.nextSibling); } });</script>")


def summary_fragments(doc: dict, json_name: str, json_sha256: str, approver: str = "",
                      role: str = "") -> tuple[list[str], list[str]]:
    """(prefix, postfix) HTML for pytest_html_results_summary."""
    prefix = [verdict_block(doc), fingerprint_block(doc), layer_summary(doc)]
    postfix = [p for p in (matrix(doc, "node"), matrix(doc, "cluster"), mig_block(doc), waivers_block(doc),
                                remediation_block(doc)) if p]
    postfix.append(signoff_block(doc, json_name, json_sha256, approver, role))
    return prefix, postfix


# -- the results table -------------------------------------------------------------------------
HEADER_CELLS = ['<th class="sortable" data-column-type="check">Check</th>',
                '<th class="sortable" data-column-type="host">Host</th>',
                '<th class="sortable" data-column-type="verdict">Verdict</th>']


def header_cells(cells: list[str]) -> None:
    """Check, host and verdict after pytest's Result column; no Links column (details are inline)."""
    cells[:] = [c for c in cells if "Links" not in c]
    cells[1:1] = HEADER_CELLS


def row_cells(record: dict | None, cells: list[str]) -> None:
    cells[:] = [c for c in cells if 'class="col-links"' not in c]
    if record is None:
        cells[1:1] = ['<td class="col-check"></td>', '<td class="col-host"></td>', '<td class="col-verdict"></td>']
        return
    cells[1:1] = [f'<td class="col-check"><a id="{record["anchor"]}"></a>{escape(row_key(record))}</td>',
                  f'<td class="col-host">{escape(record.get("host") or "")}</td>',
                  f'<td class="col-verdict">{badge(record)}</td>']


def detail(r: dict) -> str:
    """The per-result block shown when a row of the results table is expanded."""
    items = [("Check", f'<span class="gc-mono">{escape(r["check_id"])}</span> — {escape(r["title"])}'),
             ("Rule", escape(r.get("rule") or "")),
             ("Host", escape(r.get("host") or "")),
             ("Verdict", badge(r))]
    if r.get("waiver"):
        w = r["waiver"]
        how = "WAIVED" if w["status"] == "valid" else "waiver EXPIRED (the failure stands)"
        items.append(("Waiver", f"{how}: {escape(w['reason'])} — owner {escape(w['owner'])}, "
                                f"expires {escape(w['expires'])} (waiver #{w['index'] + 1})"))
    if r.get("blocked_by"):
        items.append(("Blocked by", f'<span class="gc-mono">{escape(r["blocked_by"])}</span>'))
    if r.get("message"):
        what = "Expected vs actual" if r["verdict"] in ("fail", "waived") else "Reason"
        items.append((what, f"<pre>{escape(r['message'])}</pre>"))
    if r.get("evidence"):
        items.append(("Evidence", f"<pre>{escape(r['evidence'])}</pre>"))
    if r.get("remediation"):
        items.append(("Remediation", f"<pre>{escape(r['remediation'])}</pre>"))
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in items if v)
    return f'<dl class="gc-detail" data-anchor="{r["anchor"]}">{body}</dl>'
