"""Benchmark (a script, not a test): how the report grows with hosts, and how fast a big one opens.

    .venv/bin/python benchmarks/report_scale.py [--hosts 100 1000] [--faulty-every 10]

For each N: N simulated hosts (testbed scenarios rendered once into chroot roots, N links to
them, as ``selftest/report`` does: one faulty scenario in every ``--faulty-every`` hosts, the
rest healthy), ``pytest -m node`` over them with the chroot backend, then it prints the HTML
and JSON sizes, the number of non-pass results, and the page's load time in headless Chromium:
``loadEventEnd`` of the navigation (after pytest-html's script rendered the results table and
ours wired the matrix), read back from the DOM, and the wall time of the whole chromium run.
Goals (issue #14): 100 hosts ≤ 3 MB of HTML; 1,000 hosts open within 3 s. Needs root (chroot).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

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
    probe.write_text(page.read_text().replace("</body>", TIMING_PROBE + "</body>"))
    start = time.monotonic()
    p = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,900",
                        "--virtual-time-budget=30000", "--dump-dom", probe.as_uri()],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "HOME": "/tmp"})
    wall = time.monotonic() - start
    probe.unlink()
    found = re.search(r'data-load-ms="(\d+)"', p.stdout)
    return (float(found.group(1)) if found else float("nan")), wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hosts", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--faulty-every", type=int, default=10, help="one faulty host in every N (0: none)")
    ap.add_argument("--keep", metavar="DIR", help="keep hosts and reports in DIR")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("report_scale: needs root (chroot hosts)")
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="gc-report-scale-"))
    base.mkdir(parents=True, exist_ok=True)
    print(f"{'hosts':>6} {'results':>8} {'non-pass':>8} {'run s':>7} {'HTML MB':>8} {'JSON MB':>8} "
          f"{'load ms':>8} {'chromium s':>10}")
    for n in args.hosts:
        hosts = farm(base, n, args.faulty_every)
        wall, proc = run_suite(hosts, base / f"reports-{n}")
        html = next((base / f"reports-{n}").glob("*.html"), None)
        data = next((base / f"reports-{n}").glob("*.json"), None)
        if html is None or data is None:
            sys.exit(f"report_scale: the run over {n} hosts wrote no report:\n{proc.stdout[-3000:]}{proc.stderr[-2000:]}")
        doc = json.loads(data.read_text())
        bad = sum(r["verdict"] != "pass" for r in doc["results"])
        load_ms, chromium_s = load_time(html)
        print(f"{n:>6} {len(doc['results']):>8} {bad:>8} {wall:>7.1f} {html.stat().st_size / 1e6:>8.2f} "
              f"{data.stat().st_size / 1e6:>8.2f} {load_ms:>8.0f} {chromium_s:>10.1f}", flush=True)
        for old in (base / f"reports-{n}").iterdir():
            if not args.keep:
                old.unlink()
    print(f"hosts and reports under {base}" if args.keep else "")


if __name__ == "__main__":
    main()
