"""Benchmark (a script, not a test): how the report grows with hosts, and how fast a big one opens.

    .venv/bin/python benchmarks/report_scale.py [--hosts 100 1000] [--faulty-every 10]

For each N: N simulated hosts (testbed scenarios rendered once into chroot roots, N links to
them, as ``selftest/report`` does: one faulty scenario in every ``--faulty-every`` hosts, the
rest healthy), ``pytest -m node`` over them with the chroot backend, then it prints the HTML
and JSON sizes, the number of non-pass results, and the page's load time in headless Chromium:
``loadEventEnd`` of the navigation (after pytest-html's script rendered the results table and
ours wired the matrix), read back from the DOM, and the wall time of the whole chromium run.
Goals (issue #14): 100 hosts ≤ 3 MB of HTML; 1,000 hosts open within 3 s. Needs root (chroot).

Then the JSON results file by shape (issue #27: ≤ 5 MB at 3,000 nodes), for each run above and
for ``--synthesize`` N Kubernetes GPU nodes: every cluster check of tests/cluster about one node
(parametrized by ``gpu_node``: its id, title, rule and fix as the suite declares them), one result
per check and node, one node in every ``--faulty-every`` failing each of them (message and fix),
each result with ``--evidence-bytes`` of evidence naming its node. Shapes: ``v3`` (one whole
record per check × target), ``v4`` (the file now: one item per check × target, each check's
title/rule/layer once in ``checks``) and ``grouped`` (one item per check holding its per-target
sub-results: the alternative issue #27 asked to measure). It prints figures; it judges nothing.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import inspect
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "selftest"), str(REPO / "selftest" / "report")]

from gpuconform.checks import REGISTRY, fix_for  # noqa: E402
from gpuconform.report import model  # noqa: E402
from gpuconform.report.run import RunReport, dumps  # noqa: E402
from report_harness import with_probe  # noqa: E402  (the probe's script allowed by the page's CSP)
from testbed.hosts import rootfs, scenarios  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
FAULTS = ("dkms-added", "containerd-not-default", "sig-enforce-blocks-driver", "nouveau-loaded")
#: appended to a copy of the page: when it has loaded, the navigation's timing goes into the DOM
TIMING_PROBE = """<script>window.addEventListener('load', function () { setTimeout(function () {
  var n = performance.getEntriesByType('navigation')[0];
  document.body.setAttribute('data-load-ms', String(Math.round(n.loadEventEnd || performance.now())));
}, 0); });</script>"""


def farm(base: Path, n: int, faulty_every: int) -> list[Path]:
    roots = {name: base / "roots" / name for name in ("gpu-good", *FAULTS)}
    for name, root in roots.items():
        if not root.exists():
            rootfs.render(scenarios.build(name), root)
    links = base / f"farm-{n}"
    links.mkdir(exist_ok=True)
    hosts = []
    for i in range(n):
        scenario = FAULTS[(i // faulty_every) % len(FAULTS)] if faulty_every and i % faulty_every == 0 else "gpu-good"
        link = links / f"gpu-{i + 1:04d}"
        if not link.exists():
            link.symlink_to(roots[scenario])
        hosts.append(link)
    return hosts


def run_suite(hosts: list[Path], reports: Path) -> tuple[float, subprocess.CompletedProcess]:
    reports.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-m", "node",
           f"--report-dir={reports}", "--connection=chroot", "--hosts=" + ",".join(map(str, hosts))]
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    return time.monotonic() - start, proc


def load_time(page: Path) -> tuple[float, float]:
    """(loadEventEnd in ms as the page measured it, wall seconds of the chromium run)."""
    probe = page.with_name(page.stem + ".probe.html")
    probe.write_text(with_probe(page.read_text(), TIMING_PROBE))
    start = time.monotonic()
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                        "--virtual-time-budget=30000", "--dump-dom", probe.as_uri()],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "HOME": "/tmp"})
    wall = time.monotonic() - start
    probe.unlink()
    found = re.search(r'data-load-ms="(\d+)"', p.stdout)
    return (float(found.group(1)) if found else float("nan")), wall


def node_checks() -> list[tuple[str, str, dict]]:
    """(check id, test node id without params, check mark kwargs + rule) of each cluster check about one GPU node."""
    for path in sorted((REPO / "tests" / "cluster").glob("test_*.py")):
        spec = importlib.util.spec_from_file_location(f"report_scale_{path.stem}", path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    out = []
    for check_id, entry in sorted(REGISTRY.items()):
        fn = entry["fn"]
        if "gpu_node" in inspect.signature(fn).parameters:
            mark = next(m for m in fn.pytestmark if m.name == "check")
            test = f"{Path(fn.__code__.co_filename).relative_to(REPO)}::{fn.__name__}"
            out.append((check_id, test, {**mark.kwargs, "rule": (fn.__doc__ or "").strip()}))
    return out


def synthetic_nodes(n: int, faulty_every: int, evidence_bytes: int) -> dict:
    """The run document (whole records) of the per-node cluster checks over ``n`` GPU nodes."""
    profile = argparse.Namespace(name="seed-h100", path="profiles/seed-h100.yaml", sha256="0" * 64)
    run = RunReport(profile, (), REPO, ("-m", "cluster"), "-m 'cluster'", dt.date.today())
    checks = node_checks()
    for i in range(n):
        node = f"gpu-worker-{i + 1:05d}"
        bad = bool(faulty_every) and i % faulty_every == 0
        seen = f"GET /api/v1/nodes/{node}: labels nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3, gpu.count=8"
        for check_id, test, kw in checks:
            nodeid = f"{test}[{node}]"
            run.records.append({
                "check_id": check_id, "param": node, "title": kw["title"], "rule": kw["rule"], "layer": "cluster",
                "host": node, "verdict": "fail" if bad else "pass",
                "message": f"{node}: nvidia.com/gpu.count='4' (expected '8')" if bad else "",
                "evidence": (seen * (evidence_bytes // len(seen) + 1))[:evidence_bytes],
                "remediation": fix_for(kw["fix"], None) if bad else None, "blocked_by": None, "retries": 0,
                "waiver": None, "nodeid": nodeid, "anchor": model.anchor(nodeid), "duration": 0.004})
        run.platform.setdefault("cluster", {"name": "k8s-ml", "api_server_version": "v1.31.4", "gpu_nodes": []})
        run.platform["cluster"]["gpu_nodes"].append({"name": node, "gpu_product": "NVIDIA-H100-80GB-HBM3",
                                                     "gpu_count": 8, "mig_config": "all-disabled",
                                                     "mig_state": "success", "mig_devices": None})
    return run.document()


def shape_sizes(doc: dict) -> tuple[int, int, int]:
    """Bytes of the results file of ``doc`` (whole records) as v3, v4 (the file) and grouped."""
    v3 = len(dumps({**doc, "schema": "gpuconform/results/v3"}).encode())
    v4doc = model.compact(doc)
    v4 = len(dumps(v4doc).encode())
    groups: dict[str, dict] = {}
    for r in v4doc["results"]:
        group = groups.setdefault(r["check_id"], {"check_id": r["check_id"], **v4doc["checks"][r["check_id"]],
                                                  "results": []})
        group["results"].append({k: v for k, v in r.items() if k != "check_id"})
    grouped = {k: v for k, v in v4doc.items() if k != "checks"} | {"results": list(groups.values())}
    return v3, v4, len(dumps(grouped).encode())


def print_shapes(rows: list[tuple[str, int, dict]]) -> None:
    print(f"\nJSON results file by shape (MB; bytes per result)\n{'source':<18} {'targets':>7} {'results':>8} "
          f"{'v3':>15} {'v4 (file)':>15} {'grouped':>15}")
    for source, n, doc in rows:
        count = len(doc["results"])
        cells = " ".join(f"{b / 1e6:>8.2f} ({b / max(count, 1):>4.0f})" for b in shape_sizes(doc))
        print(f"{source:<18} {n:>7} {count:>8} {cells}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--faulty-every", type=int, default=10, help="one faulty host in every N (0: none)")
    ap.add_argument("--keep", metavar="DIR", help="keep hosts and reports in DIR")
    ap.add_argument("--synthesize", type=int, nargs="*", default=[3000], metavar="N",
                    help="JSON sizes by shape for N synthetic Kubernetes GPU nodes (none: only the runs')")
    ap.add_argument("--evidence-bytes", type=int, default=74,
                    help="evidence per synthetic result (74: the mean at 3,000 KWOK nodes, issue #27)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("report_scale: needs root (chroot hosts)")
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gc-report-scale-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"{'hosts':>6} {'results':>8} {'non-pass':>8} {'run s':>7} {'HTML MB':>8} {'JSON MB':>8} "
          f"{'load ms':>8} {'chromium s':>10}")
    shapes = []
    for n in args.hosts:
        hosts = farm(base, n, args.faulty_every)
        wall, proc = run_suite(hosts, base / f"reports-{n}")
        html = next((base / f"reports-{n}").glob("*.html"), None)
        data = next((base / f"reports-{n}").glob("*.json"), None)
        if html is None or data is None:
            sys.exit(f"report_scale: the run over {n} hosts wrote no report:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        doc = model.read(data.read_text())
        shapes.append(("node run", n, doc))
        bad = sum(r["verdict"] != "pass" for r in doc["results"])
        load_ms, chromium_s = load_time(html)
        print(f"{n:>6} {len(doc['results']):>8} {bad:>8} {wall:>7.1f} {html.stat().st_size / 1e6:>8.2f} "
              f"{data.stat().st_size / 1e6:>8.2f} {load_ms:>8.0f} {chromium_s:>10.1f}", flush=True)
        for old in (base / f"reports-{n}").iterdir():
            if not args.keep:
                old.unlink()
    shapes += [("cluster synthetic", n, synthetic_nodes(n, args.faulty_every, args.evidence_bytes))
               for n in args.synthesize]
    print_shapes(shapes)
    print(f"hosts and reports under {base}" if args.keep else "")


if __name__ == "__main__":
    main()
