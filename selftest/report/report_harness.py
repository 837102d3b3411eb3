"""Helpers of the report selftests: planting secrets, running the suite, driving chromium."""
from __future__ import annotations

import base64
import gzip
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from runner import REPO, run_suite  # selftest/runner.py

__all__ = ["REPO", "SECRETS", "SHOWCASE", "Run", "run", "hosts_arg", "dump_dom", "screenshot",
           "plant_secrets", "mixed_mig_scenario", "page_passes", "with_probe"]

CHROMIUM = Path("/usr/bin/chromium")
#: Planted in the "leaky" host; none may reach the HTML, JSON or JUnit output.
SECRETS = {
    "password": "Pl4ntedPassw0rd",
    "bearer": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkIn0.UGxhbnRlZFNpZ25hdHVyZQ",
    "cookie": "Pl4ntedC00kieValue",
    "os_token": "Pl4ntedOsT0ken",
    "cmdline": "Pl4ntedCmdl1ne",
    "proxy": "Pl4ntedProxyPass",
}
#: Scenarios of the main run: clean, MIG, one failure of each kind, a blocked chain.
SHOWCASE = ("gpu-good", "good-mig", "dkms-added", "nouveau-loaded", "sig-enforce-blocks-driver",
            "containerd-not-default")


def plant_secrets(root: Path) -> None:
    """Secrets where evidence, host facts and a failure message pick them up."""
    cfg = root / "etc/containerd/config.toml"
    cfg.write_text(f'# mirror pull secret: password = "{SECRETS["password"]}"\n'
                   f'# Authorization: Bearer {SECRETS["bearer"]}\n'
                   f'# Cookie: oauth2_proxy_kubeflow={SECRETS["cookie"]}; Path=/\n' + cfg.read_text())
    osr = root / "etc/os-release"
    osr.write_text(osr.read_text().replace('PRETTY_NAME="RED OS 8.0"',
                                           f'PRETTY_NAME="RED OS 8.0 token={SECRETS["os_token"]}"'))
    cmdline = root / "proc/cmdline"
    # a forbidden parameter whose value is a secret: the failure message quotes it
    cmdline.write_text(cmdline.read_text().rstrip("\n") + f" lockdown=password={SECRETS['cmdline']}\n")


#: A MIG host with several layouts: all-balanced on GPUs 0-3, one 7g on 4-5, 4g+3g on 6-7.
MIXED_MIG = [("3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb")] * 4 + [("7g.80gb",)] * 2 + [("4g.40gb", "3g.40gb")] * 2


def mixed_mig_scenario(scenarios):
    s = scenarios.build("good-mig").clone("mig-mixed", "MIG enabled, mixed layouts per GPU")
    for gpu, devices in zip(s.gpus, MIXED_MIG):
        gpu.mig_devices = devices
    return s


def hosts_arg(roots) -> list[str]:
    return ["--connection=chroot", "--hosts=" + ",".join(str(r) for r in roots)]


class Run:
    """One run of the suite: its process, JSON document and output files."""

    def __init__(self, proc, doc, folder: Path):
        self.proc, self.doc, self.folder = proc, doc, folder
        self.html = next(iter(sorted(folder.glob("*.html"))), None)
        self.json = next(iter(sorted(folder.glob("*.json"))), None)
        junit = folder / "junit.xml"
        self.junit = junit if junit.exists() else None

    def page(self) -> str:
        return self.html.read_text()

    def page_and_passes(self) -> str:
        """The page with its compressed pass block unpacked: what a reader can reach in it."""
        page = self.page()
        return page + json.dumps(page_passes(page))

    def output(self) -> str:
        return self.proc.stdout[-4000:] + self.proc.stderr[-2000:]


def page_passes(page: str) -> dict:
    """The pass block of a page (check rows, hosts, rules, evidence texts), unpacked; {} if none."""
    found = re.search(r'<script type="application/octet-stream" id="gc-passes"[^>]*>([^<]*)</script>', page)
    return json.loads(gzip.decompress(base64.b64decode(found.group(1)))) if found else {}


def with_probe(page: str, script: str) -> str:
    """The page with a test's ``<script>`` at the end of its body, allowed by the page's
    Content-Security-Policy (its sha256 added to script-src): the page refuses any other."""
    body = script[len("<script>"):-len("</script>")]
    digest = base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()
    assert "script-src 'sha256-" in page
    page = page.replace("script-src ", f"script-src 'sha256-{digest}' ", 1)
    return page.replace("</body>", script + "</body>")


def run(folder: Path, *args: str, timeout: float = 240, env: dict | None = None) -> Run:
    proc, doc = run_suite(*args, report_dir=folder, timeout=timeout, env=env)
    return Run(proc, doc, folder)


def chromium() -> Path:
    if not CHROMIUM.exists():
        pytest.fail("headless chromium is missing: run `make sysdeps` (testbed/install-sysdeps.sh installs it)")
    return CHROMIUM


def _browser(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    cmd = [str(chromium()), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--allow-file-access-from-files", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "HOME": os.environ.get("HOME", "/tmp")})


def dump_dom(page: Path, size: str = "1400,900") -> str:
    """The page's DOM after its scripts ran, as chromium serializes it."""
    p = _browser(f"--window-size={size}", "--virtual-time-budget=10000", "--dump-dom", page.as_uri())
    assert p.returncode == 0 and "</html>" in p.stdout, p.stderr[-2000:]
    return p.stdout


def screenshot(page: Path, png: Path, size: str = "1400,900") -> Path:
    p = _browser(f"--window-size={size}", "--virtual-time-budget=10000", f"--screenshot={png}", page.as_uri())
    assert p.returncode == 0 and png.exists() and png.stat().st_size > 10_000, p.stderr[-2000:]
    return png


