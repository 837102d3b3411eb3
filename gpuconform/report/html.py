"""HTML fragments the plugin hands to pytest-html's hooks: verdict, what must be fixed, drift since
the baseline, summary by layer, fingerprint, node × check matrix, MIG pictures, waivers,
environment, sign-off block, result-row cells (the test id's included), result details and logs;
and the page's Content-Security-Policy, added once pytest-html has written it (``seal``).

The page grows with failures, not with hosts × checks: a clean pass of a host or node check is a
bare letter in the matrix, not a row of the results table; its rule and evidence are one click
away, from one gzip-compressed block of the page (each evidence text stored once), and in the
JSON. Everything here is built from the run's document (``model.Document`` as a dict: whole
records, not the file's compact form), whose text was redacted when it entered the report; every
value is HTML-escaped here (the pass panel fills itself with ``textContent``).
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import re
from collections import Counter, defaultdict
from html import escape

from gpuconform.layers import CHECK_LAYERS
from gpuconform.report import mig_svg, terminal
from gpuconform.report.model import VERDICTS
from gpuconform.safetext import terminal_text

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
    """A sort key in which runs of ASCII digits compare as numbers (gpu-2 before gpu-10); any other
    character, a superscript digit included, compares as text."""
    return [int(t) if i % 2 else t for i, t in enumerate(re.split(r"([0-9]+)", s or ""))]


def host_labels(hosts: list[str]) -> dict[str, str]:
    """Short column labels: hosts given as paths (chroot roots) lose their common folder."""
    if len(hosts) > 1 and all(h.startswith("/") for h in hosts):
        base = os.path.commonpath(hosts)
        return {h: os.path.relpath(h, base) if h != base else h for h in hosts}
    return {h: h for h in hosts}


def listed(r: dict) -> bool:
    """Whether the result gets a row (with its details) in the results table: everything but a
    clean pass of a host or node check, which the matrix shows and the pass panel explains, and a
    skip the profile asked for there, which the matrix shows with its reason."""
    clean = (r["verdict"] == "pass" and not r.get("retries")) or r["verdict"] == "skip"
    return not (clean and r.get("host") and r.get("layer") in MATRIX_LAYERS)


MATRIX_LAYERS = ("node", "cluster")


def row_key(r: dict) -> str:
    """The check with its item; a cluster check's node is its host, not an item."""
    shown = r.get("param") is not None and r.get("param") != r.get("host")
    return r["check_id"] + (f"[{r['param']}]" if shown else "")


# -- top of the page ---------------------------------------------------------------------------
def verdict_block(doc: dict) -> str:
    v = doc["verdict"]
    scope = ""
    ran = [layer for layer in CHECK_LAYERS if sum(doc["layers"].get(layer, {}).values())]
    if v["partial"]:
        layers = f'{escape(", ".join(ran) or "no")} layer{"s" if len(ran) != 1 else ""}'
        scope = f' <span class="gc-scope">(partial run: {layers} only)</span>'
    reasons = "".join(f"<li>{escape(x)}</li>" for x in v["reasons"])
    rs = doc.get("remediation") or []
    fixes = (f'<p id="gc-remediation-counts">Remediation (--remediate={escape(rs[0]["mode"])}): '
             f'{escape(terminal.remediation_counts(rs))} — <a href="#gc-remediation">the table below</a>; '
             'the verdict is the checks\' before it.</p>') if rs else ""
    signoff = ('<p id="gc-signoff-link"><a href="#gc-signoff">Sign-off ↓</a> (the block to sign, with the '
               'profile\'s, the commit\'s and the results file\'s fingerprints, at the end of the page)</p>')
    return (f'<div class="gc-section gc-top"><div id="gc-verdict" class="gc-verdict {v["word"].lower()}">'
            f'{v["word"]}</div>{scope}' + (f'<ul class="gc-reasons">{reasons}</ul>' if reasons else "")
            + fixes + signoff + "</div>")


def _first_line(text: str | None, limit: int = 240) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _host_links(rs: list[dict], labels: dict[str, str], shown: int = 12) -> str:
    links = [f'<a href="#{r["anchor"]}" title="{escape(r["host"])}">{escape(labels.get(r["host"], r["host"]))}</a>'
             for r in rs[:shown]]
    more = f" … and {len(rs) - shown} more" if len(rs) > shown else ""
    return ", ".join(links) + more


def fix_block(doc: dict) -> str:
    """What must be fixed: the failed and could-not-check results grouped by check, most hosts
    first — check, hosts (linked to their results), the finding in one line, the fix."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in doc["results"]:
        if r["verdict"] in ("fail", "error"):
            groups[(r["verdict"], row_key(r))].append(r)
    blocked = sum(r["verdict"] == "blocked" for r in doc["results"])
    waived = sum(r["verdict"] == "waived" for r in doc["results"])
    also = "; ".join(x for x in (f"{blocked} blocked by these" if blocked else "",
                                 f"{waived} waived (see Waivers)" if waived else "") if x)
    also = f' <span class="gc-scope">({escape(also)})</span>' if also else ""
    if not groups:
        return (f'<div class="gc-section" id="gc-fix"><h3>What must be fixed</h3><p class="gc-nothing">'
                f'Nothing: no check failed and none could not check.{also}</p></div>')
    labels = host_labels(sorted({r["host"] for rs in groups.values() for r in rs if r["host"]}, key=_natural))
    rows = []
    order = sorted(groups, key=lambda k: (k[0] != "fail", -len(groups[k]), _natural(k[1])))
    for verdict, key in order:
        rs = sorted(groups[(verdict, key)], key=lambda r: _natural(r["host"] or ""))
        findings = Counter(_first_line(r["message"]) for r in rs)
        finding, n = findings.most_common(1)[0]
        if len(findings) > 1:
            finding += f"  (on {n} of {len(rs)}; {len(findings) - 1} other finding{'s' if len(findings) > 2 else ''})"
        fix = _first_line(rs[0].get("remediation")) if verdict == "fail" else "see the finding (could not check)"
        hosts = (f'<b>{len(rs)}</b>: {_host_links([r for r in rs if r["host"]], labels)}'
                 if rs[0]["host"] else f'<a href="#{rs[0]["anchor"]}">{escape(rs[0]["layer"] or "")}</a>')
        rows.append(f'<tr data-check="{escape(key)}" data-verdict="{verdict}" data-hosts="{len(rs)}">'
                    f'<td class="gc-mono">{escape(key)}<br><small>{escape(rs[0]["title"])}</small></td>'
                    f'<td><span class="gc-badge v-{verdict}">{escape(LABEL[verdict])}</span></td>'
                    f'<td class="gc-fix-hosts">{hosts}</td><td>{escape(finding)}</td>'
                    f'<td class="gc-mono">{escape(fix)}</td></tr>')
    return (f'<div class="gc-section" id="gc-fix"><h3>What must be fixed: {len(groups)} '
            f'check{"s" if len(groups) != 1 else ""}</h3><p>Failed and could-not-check results by check, '
            f'most hosts first; each host links to its result with the evidence and the full fix.{also}</p>'
            '<table id="gc-fix-table" class="gc-table"><thead><tr><th>Check</th><th>Verdict</th><th>Hosts</th>'
            f'<th>Finding</th><th>Fix</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>')


FACT_LABEL = {"driver": "driver version", "fabric_manager": "fabric manager version", "gpu_model": "GPU model",
              "gpu_count": "GPU count", "mig": "MIG layout", "kernel": "kernel", "kubernetes": "Kubernetes version",
              "gpu_operator": "GPU Operator version", "kubeflow": "Kubeflow version"}


def drift_block(doc: dict) -> str:
    """Changed since the baseline (--baseline): results newly failing or passing, hosts added or
    removed, platform facts; the kinds --fail-on-drift names are marked when they fail the run."""
    d = doc.get("drift")
    if not d:
        return ""
    failing = set(d["failing"])

    def mark(kind: str) -> str:
        if kind in failing:
            return ' <span class="gc-badge v-fail">fails the run (--fail-on-drift)</span>'
        return ""

    def results(kind: str, what: str) -> str:
        rows = "".join(f'<tr><td class="gc-mono"><a href="#{c["anchor"]}">{escape(row_key(c))}</a></td>'
                       f'<td class="gc-mono">{escape(c["host"] or "")}</td>'
                       f'<td>{escape(c["was"] or "no result")} → <b>{escape(c["now"])}</b></td></tr>'
                       for c in d[kind])
        return (f'<h4 data-drift="{kind}">{what}: {len(d[kind])}{mark(kind)}</h4><table class="gc-table" '
                f'id="gc-drift-{kind}"><thead><tr><th>Check</th><th>Host</th><th>Verdict</th></tr></thead>'
                f'<tbody>{rows}</tbody></table>') if d[kind] else ""
    parts = [results("newly_failing", "Newly failing"), results("newly_passing", "Newly passing")]
    for kind, what in (("hosts_added", "Hosts added"), ("hosts_removed", "Hosts removed")):
        if d[kind]:
            parts.append(f'<h4 data-drift="{kind}">{what}: {len(d[kind])}{mark(kind)}</h4><p class="gc-mono" '
                         f'id="gc-drift-{kind}">{escape(", ".join(d[kind]))}</p>')
    if d["facts"]:
        rows = "".join(f'<tr data-kind="{c["kind"]}"><td>{escape(FACT_LABEL[c["kind"]])}{mark(c["kind"])}</td>'
                       f'<td class="gc-mono">{escape(c["host"] or "cluster")}</td><td class="gc-mono">'
                       f'{escape(c["was"] or "")} → <b>{escape(c["now"] or "")}</b></td></tr>' for c in d["facts"])
        parts.append(f'<h4 data-drift="facts">Platform facts changed: {len(d["facts"])}</h4><table class="gc-table" '
                     f'id="gc-drift-facts"><thead><tr><th>Fact</th><th>Host / node</th><th>Was → now</th></tr>'
                     f'</thead><tbody>{rows}</tbody></table>')
    body = "".join(p for p in parts if p) or '<p class="gc-nothing">Nothing changed.</p>'
    date = d["baseline_started"].replace("T", " ").replace("+00:00", " UTC")
    return (f'<div class="gc-section" id="gc-drift"><h3>Changed since {escape(date)}</h3><p>Baseline '
            f'<span class="gc-mono">{escape(d["baseline"])}</span> ({escape(d["baseline_verdict"])}, sha256 '
            f'<span class="gc-mono">{d["baseline_sha256"][:16]}…</span>)'
            + ('' if d["baseline_verdict"] == "ACCEPTED" else
               ': <b>not an accepted run</b>, compared because of --force-baseline')
            + ('' if d.get("baseline_profile") in ("", None, doc["fingerprint"]["profile"]) else
               f': <b>a run of another profile ({escape(d["baseline_profile"])})</b>, compared because of '
               f'--force-baseline')
            + f'.</p>{body}</div>')


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
        f'<td>{escape(h.get("driver") or "?")}</td><td>{escape(h.get("fabric_manager") or "")}</td>'
        f'<td>{escape(h.get("mig") or "unknown")}</td>'
        f'<td>{escape(h.get("os") or "?")}</td><td>{escape(h.get("kernel") or "?")}</td>'
        f'<td>{escape(h.get("error") or "")}</td></tr>' for h in hosts)
    hosts_html = ""
    if hosts:
        common = os.path.commonpath([h["host"] for h in hosts]) if labels[hosts[0]["host"]] != hosts[0]["host"] else ""
        where = f' <small>(under <span class="gc-mono">{escape(common)}/</span>)</small>' if common else ""
        hosts_html = (f'<h4>Hosts: {len(hosts)}{where}</h4><div class="gc-hosts-scroll">'
                      '<table id="gc-hosts" class="gc-table"><thead><tr>'
                      "<th>Host</th><th>GPU model</th><th>GPUs</th><th>Driver</th><th>Fabric manager</th><th>MIG</th><th>OS</th>"
                      f"<th>Kernel</th><th>Facts error</th></tr></thead><tbody>{host_rows}</tbody></table></div>")
    return (f'<div class="gc-section" id="gc-fingerprint"><h3>Platform fingerprint</h3>'
            f'<table class="gc-kv">{_kv(rows)}</table>{hosts_html}</div>')


def layer_summary(doc: dict) -> str:
    head = "".join(f'<th class="v-{v}">{escape(LABEL[v])}</th>' for v in VERDICTS)
    rows = []
    for layer in CHECK_LAYERS:
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
    """Rows: checks of ``layer`` about a host/node; columns: hosts. A non-pass cell links to its
    result row; a pass cell is a bare letter (the pass panel shows its evidence on a click), so
    thousands of hosts stay a light page."""
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
                tds.append("<td></td>")
            elif not listed(r) and r["verdict"] == "skip":
                tds.append(f'<td class="v-skip" title="{escape(r["message"][:300])}">S</td>')
            elif not listed(r):
                tds.append('<td class="v-pass">P</td>')
            else:
                v = shown_verdict(r)
                tip = f"{key} on {h}: {verdict_text(r)}" + (f" — {r['message']}" if r["message"] else "")
                tds.append(f'<td class="v-{v}"><a href="#{r["anchor"]}" title="{escape(tip[:300])}">{LETTER[v]}</a></td>')
        body.append(f'<tr data-check="{escape(key)}"><th class="check" title="{escape(titles[key])}">'
                    f'{escape(key)}</th>{"".join(tds)}</tr>')
    legend = "".join(f'<span><span class="gc-badge v-{v}">{LETTER[v]}</span> {escape(LABEL[v])}</span>'
                     for v in LETTER)
    what = "Node × check matrix" if layer == "node" else f"{layer.capitalize()} checks × Kubernetes node"
    table_id = "gc-matrix" if layer == "node" else f"gc-matrix-{layer}"
    return (f'<div class="gc-section"><h3>{what}</h3><p class="gc-legend">{legend} '
            f'— click a letter: a pass shows its rule and evidence here, anything else leads to its result below.'
            f'</p><div class="gc-matrix-wrap"><table id="{table_id}" class="gc-matrix">'
            f'<thead><tr><th class="check corner">check \\ host</th>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div></div>')


def _blocks(evidence: str) -> list[str]:
    """Evidence cut at its commands (``$ cmd``), so that what hosts and checks share is kept once."""
    return [b for b in re.split(r"\n\n(?=\$ )", evidence) if b] if evidence else []


def pass_data(doc: dict) -> str:
    """The passes the results table leaves out, for the pass panel: their check, host, rule and
    evidence, each text stored once, gzip-compressed, base64 (read by the page on the first click)."""
    texts: dict[str, int] = {}
    checks: dict[str, int] = {}
    hosts: dict[str, int] = {}
    rules: dict[str, list] = {}
    passes = []
    def idx(table: dict, value: str) -> int:
        return table.setdefault(value, len(table))
    for r in doc["results"]:
        if listed(r) or r["verdict"] != "pass":
            continue
        key = row_key(r)
        c = idx(checks, key)
        rules.setdefault(str(c), [r["check_id"], r["title"], r.get("rule") or ""])
        passes.append([c, idx(hosts, r["host"]), [idx(texts, b) for b in _blocks(r.get("evidence") or "")]])
    if not passes:
        return ""
    data = {"c": list(checks), "h": list(hosts), "r": rules, "b": list(texts), "p": passes}
    packed = gzip.compress(json.dumps(data, separators=(",", ":")).encode(), mtime=0)
    return (f'<script type="application/octet-stream" id="gc-passes" data-encoding="gzip+base64" '
            f'data-count="{len(passes)}">{base64.b64encode(packed).decode()}</script>'
            '<div id="gc-pass-panel" class="gc-pass-panel" hidden><button type="button" class="gc-close" '
            'title="close">×</button><h4></h4><dl class="gc-detail"><dt>Rule</dt><dd class="gc-rule"></dd>'
            '<dt>Host</dt><dd class="gc-mono gc-host"></dd><dt>Verdict</dt><dd><span class="gc-badge v-pass">PASS'
            '</span></dd><dt>Evidence</dt><dd><pre class="gc-evidence"></pre></dd></dl></div>')


def _cluster_mig_pictures(doc: dict) -> tuple[list[str], str]:
    """(one picture per distinct MIG layout of the cluster's GPU nodes, their table by label)."""
    nodes = sorted(((doc["fingerprint"].get("cluster") or {}).get("gpu_nodes") or []),
                   key=lambda n: _natural(n["name"]))
    if not nodes:
        return [], ""
    groups: dict[tuple, list[str]] = {}
    for n in nodes:
        key = (n.get("gpu_product"), n.get("gpu_count"), n.get("mig_config"), n.get("mig_state"),
               tuple(n["mig_devices"]) if n.get("mig_devices") is not None else None)
        groups.setdefault(key, []).append(n["name"])
    pictures, rows = [], []
    for (product, count, config, state, devices), names in groups.items():
        shown = ", ".join(names[:8]) + (f" … ({len(names)} nodes)" if len(names) > 8 else "")
        rows.append(f'<tr data-mig-config="{escape(config or "")}" data-nodes="{len(names)}">'
                    f'<td>{escape(config or "(no label)")}</td><td>{escape(state or "")}</td>'
                    f'<td>{escape(product or "?")}</td><td class="num">{count if count is not None else "?"}</td>'
                    f'<td class="gc-mono">{escape(shown)}</td></tr>')
        if devices and count:
            name = mig_svg.smi_name(product) or product or ""
            gpus = [{"index": i, "name": name, "mig_mode": "Enabled", "mig_devices": list(devices)}
                    for i in range(count)]
            pictures.append(mig_svg.host_svgs({"host": f"{shown} — {config}", "gpu_model": product,
                                                "gpus": gpus}, "mig-node"))
    table = ('<h4>Kubernetes GPU nodes, by their MIG labels</h4><table id="gc-mig-nodes" class="gc-table"><thead>'
             '<tr><th>nvidia.com/mig.config</th><th>mig.config.state</th><th>gpu.product</th><th>gpu.count</th>'
             f'<th>Nodes</th></tr></thead><tbody>{"".join(rows)}</tbody></table>')
    return pictures, table


def mig_block(doc: dict) -> str:
    """One picture per distinct MIG layout, naming every host (SSH) or node (Kubernetes) that has it."""
    groups: dict[str, list[str]] = {}
    for h in sorted(doc["fingerprint"].get("hosts") or [], key=lambda h: _natural(h["host"])):
        layout = [(g["index"], g["name"], tuple(g["mig_devices"])) for g in h.get("gpus") or []
                  if g.get("mig_mode") == "Enabled" or g.get("mig_devices")]
        if layout:
            groups.setdefault(repr(layout), []).append(h["host"])
    node_pictures, node_table = _cluster_mig_pictures(doc)
    if not groups and not node_table:
        return ""
    by_host = {h["host"]: h for h in doc["fingerprint"]["hosts"]}
    labels = host_labels(list(by_host))
    parts = []
    for hosts in groups.values():
        pic = mig_svg.host_svgs({**by_host[hosts[0]], "host": ", ".join(labels[h] for h in hosts)})
        parts.append(pic)
    hosts_part = (f'<h4>Hosts (from <code>nvidia-smi -L</code>)</h4>{"".join(parts)}' if parts else "")
    nodes_part = (f'{node_table}<p>Each node\'s GPUs under its <code>nvidia.com/mig.config</code> label, as the '
                  f'MIG catalog defines that config:</p>{"".join(node_pictures)}' if node_table else "")
    return (f'<div class="gc-section" id="gc-mig"><h3>MIG layout</h3><p>Each GPU as its 7 compute slices, '
            f'MIG instances placed as NVIDIA\'s placement rules allow.</p>{hosts_part}{nodes_part}</div>')


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


def environment_block(metadata: dict) -> str:
    """pytest-metadata's environment (CI variables, --metadata), rendered here: pytest-html puts
    its values into the page as markup, and a branch name may be ``feature/<img/src/onerror=…>``.
    Moved below the results table when the page loads (PAGE_SCRIPT)."""
    def value(v) -> str:
        if isinstance(v, dict):
            return "<ul>" + "".join(f"<li>{escape(str(k))}: {escape(str(x))}</li>" for k, x in v.items()) + "</ul>"
        return escape(str(v))
    rows = "".join(f'<tr><td>{escape(str(k))}</td><td>{value(v)}</td></tr>' for k, v in metadata.items())
    return (f'<div class="gc-section" id="gc-environment"><h2>Environment</h2>'
            f'<table class="gc-table">{rows}</table></div>')


def signoff_block(doc: dict, json_name: str, json_sha256: str, approver: str = "", role: str = "") -> str:
    """The block a platform owner signs; moved below the results table when the page loads (PAGE_SCRIPT)."""
    def line(value: str) -> str:
        return f'<span class="line">{escape(value)}</span>'
    v = doc["verdict"]["word"]
    f = doc["fingerprint"]
    ties = (f'<table class="gc-table" id="gc-signoff-ties"><tr><th>Profile</th><td><span class="gc-mono">'
            f'{escape(f["profile"])}</span> ({escape(f["profile_path"])}), sha256 <span class="gc-mono" '
            f'id="gc-profile-sha256">{escape(f["profile_sha256"])}</span></td></tr><tr><th>Suite commit</th><td>'
            f'<span class="gc-mono" id="gc-commit">{escape(f.get("git_commit") or "unknown (not a git checkout)")}'
            f'</span> (gpuconform {escape(f["suite_version"])})</td></tr><tr><th>Results file</th><td><span '
            f'class="gc-mono">{escape(json_name)}</span>, sha256 <span class="gc-mono" id="gc-json-sha256">'
            f'{json_sha256}</span></td></tr></table>')
    return (f'<div class="gc-signoff" id="gc-signoff"><h3>Sign-off</h3>'
            f'<p>Run verdict: <b>{v}</b>, judged against the profile with the suite\'s commit below; recompute the '
            f'results file\'s hash with <code>sha256sum {escape(json_name)}</code> and the profile\'s with '
            f'<code>sha256sum {escape(f["profile_path"])}</code> to tie this page to the run.</p>{ties}<table>'
            f'<tr><td>Approver name</td><td>{line(approver)}</td></tr>'
            f'<tr><td>Role</td><td>{line(role)}</td></tr>'
            f'<tr><td>Date</td><td>{line("")}</td></tr>'
            f'<tr><td>Decision</td><td>{line("")} (accept / reject)</td></tr>'
            f'<tr><td>Signature</td><td>{line("")}</td></tr></table></div>')


#: The page's own script: moves the environment table and the sign-off block below the
#: results table, counts the passes the table leaves out, and opens the pass panel on a click.
PAGE_SCRIPT = """<script>(function () {
var passes = null;
function load() {
  if (!passes) {
    var text = atob(document.getElementById('gc-passes').textContent.trim()), bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) { bytes[i] = text.charCodeAt(i); }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    passes = new Response(stream).json().then(function (d) {
      d.at = {}; d.p.forEach(function (x) { d.at[d.c[x[0]] + '\\n' + d.h[x[1]]] = x; }); return d; });
  }
  return passes;
}
function show(td) {
  var table = td.closest('table'), key = td.parentNode.dataset.check;
  var host = table.tHead.rows[0].cells[td.cellIndex].title;
  load().then(function (d) {
    var x = d.at[key + '\\n' + host], panel = document.getElementById('gc-pass-panel');
    if (!x) { return; }
    var rule = d.r[String(x[0])];
    panel.querySelector('h4').textContent = key + ' \\u2014 ' + rule[1];
    panel.querySelector('.gc-rule').textContent = rule[2];
    panel.querySelector('.gc-host').textContent = host;
    panel.querySelector('.gc-evidence').textContent = x[2].map(function (b) { return d.b[b]; }).join('\\n\\n');
    panel.setAttribute('data-check', key); panel.setAttribute('data-host', host);
    panel.hidden = false;
  });
}
document.addEventListener('click', function (e) {
  var td = e.target.closest && e.target.closest('table.gc-matrix td.v-pass');
  if (td && document.getElementById('gc-passes')) { show(td); }
  if (e.target.classList && e.target.classList.contains('gc-close')) { e.target.parentNode.hidden = true; }
});
document.addEventListener('DOMContentLoaded', function () {
  var t = document.getElementById('results-table'), after = t;
  ['gc-environment', 'gc-signoff'].forEach(function (id) {
    var el = document.getElementById(id);
    if (t && el) { after.parentNode.insertBefore(el, after.nextSibling); after = el; }
  });
  var note = document.getElementById('gc-table-note'), total = 0;
  [['passes', 'passed', 'Passed'], ['skips', 'skipped', 'Skipped']].forEach(function (k) {
    var n = note ? Number(note.dataset[k[0]] || 0) : 0, label = document.querySelector('.filters span.' + k[1]);
    if (n && label) {
      label.textContent = (parseInt(label.textContent, 10) + n) + ' ' + k[2] + ' (' + n + ' in the matrix only),';
      total += n;
    }
  });
  // pytest counts a blocked check as skipped: say the suite's own two verdicts
  var skipped = document.querySelector('.filters span.skipped'), blocked = note ? Number(note.dataset.blocked || 0) : 0;
  if (skipped && blocked) {
    var skips = Number(note.dataset.skipVerdicts || 0);
    skipped.textContent = (skips + blocked) + ' Skipped (' + skips + ' skip, ' + blocked + ' blocked),';
  }
  var count = document.querySelector('.run-count');
  if (count && total) { count.textContent = count.textContent.replace(/^\\d+ tests?/, function (m) {
    return (parseInt(m, 10) + total) + ' tests'; }); }
});
})();</script>"""


def summary_fragments(doc: dict, json_name: str, json_sha256: str, approver: str = "",
                      role: str = "", environment: dict | None = None) -> tuple[list[str], list[str], list[str]]:
    """(prefix, summary, postfix) HTML for pytest_html_results_summary: first what must be fixed
    and what changed, then the counts and the fingerprint; the matrices and the rest after
    pytest-html's own counts."""
    prefix = [p for p in (verdict_block(doc), fix_block(doc), drift_block(doc), layer_summary(doc),
                          fingerprint_block(doc)) if p]
    hidden = sum(not listed(r) for r in doc["results"])
    skips = sum(not listed(r) and r["verdict"] == "skip" for r in doc["results"])
    also = f" and {skips} skips the profile asked for (the S letters: their reason on hover)" if skips else ""
    text = (f'The results table below lists every result except the {hidden - skips} clean '
            f'passes of host and node checks: those are the P letters of the matrix (click one for its rule '
            f'and evidence){also}; all are in full in <span class="gc-mono">{escape(json_name)}</span>.') if hidden else ""
    # the data the page script aligns pytest-html's own counters with (blocked is a skip to pytest)
    summary = [f'<p id="gc-table-note" data-passes="{hidden - skips}" data-skips="{skips}" '
               f'data-skip-verdicts="{doc["counts"]["skip"]}" data-blocked="{doc["counts"]["blocked"]}">{text}</p>']
    postfix = [p for p in (matrix(doc, "node"), matrix(doc, "cluster"), mig_block(doc), waivers_block(doc),
                                remediation_block(doc), pass_data(doc)) if p]
    postfix.append(environment_block(environment or {}))
    postfix.append(signoff_block(doc, json_name, json_sha256, approver, role))
    postfix.append(PAGE_SCRIPT)
    return prefix, summary, postfix


# -- the results table -------------------------------------------------------------------------
HEADER_CELLS = ['<th class="sortable" data-column-type="check">Check</th>',
                '<th class="sortable" data-column-type="host">Host</th>',
                '<th class="sortable" data-column-type="verdict">Verdict</th>']


def header_cells(cells: list[str]) -> None:
    """Check, host and verdict after pytest's Result column; no Links column (details are inline)."""
    cells[:] = [c for c in cells if "Links" not in c]
    cells[1:1] = HEADER_CELLS


def row_cells(record: dict | None, cells: list[str], test_id: str) -> None:
    """Our cells in the row; no cells (pytest-html then leaves the row out) for a result the
    results table does not list (see ``listed``). The test id cell is ours too: pytest-html puts
    the id (hosts, profile items) into the page as markup."""
    if record is not None and not listed(record):
        cells.clear()
        return
    cells[:] = [f'<td class="col-testId">{escape(test_id)}</td>' if 'class="col-testId"' in c else c
                for c in cells if 'class="col-links"' not in c]
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


def log_lines(longrepr: str, sections: list[tuple[str, str]]) -> list[str]:
    """The log shown under a result row (the failure text and captured output), escaped here
    whatever pytest-html does with it, and without terminal control sequences."""
    log = [escape(terminal_text(longrepr)) + "\n"] if longrepr else []
    log += [f"{' ' + escape(terminal_text(h)) + ' ':-^80}\n{escape(terminal_text(c))}" for h, c in sections]
    return log or ["No log output captured."]


# -- the page as written -------------------------------------------------------------------------
_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def _sha256_source(script: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(script.encode()).digest()).decode() + "'"


def seal(page: str, own_scripts: tuple[str, ...]) -> str:
    """The page with a Content-Security-Policy that lets only its own inline scripts run (by their
    sha256): pytest-html's (``own_scripts``, its app.js) and PAGE_SCRIPT. Anything else in the
    page — an event handler attribute, a ``<script>`` that reached it — is refused by the browser,
    a second wall behind the escaping. Styles, images and media may be inline (data: URLs)."""
    own = {PAGE_SCRIPT[len("<script>"):-len("</script>")].strip(), *(s.strip() for s in own_scripts)}
    allowed = sorted({_sha256_source(body) for body in _SCRIPT.findall(page) if body.strip() in own})
    policy = ("default-src 'none'; script-src " + (" ".join(allowed) or "'none'") + "; style-src 'unsafe-inline'; "
              "img-src data:; media-src data:; font-src data:; base-uri 'none'; form-action 'none'")
    meta = f'<meta http-equiv="Content-Security-Policy" content="{policy}">'
    head = re.search(r"<head[^>]*>", page).end()
    return page[:head] + meta + page[head:]
