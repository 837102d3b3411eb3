"""The report under hostile inputs: every string a host, the CI environment, the command line or
the profile hands the suite is shown as text (the page's scripts alone run, by their sha256 in
the page's Content-Security-Policy), the terminal never carries a host's control sequences, and
odd names or a refusing output path never cost the other reports."""
from __future__ import annotations

import base64
import hashlib
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from report_harness import dump_dom, hosts_arg, run
from testbed.hosts import rootfs, scenarios

PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "seed-h100.yaml"
REQUIRED = "cmdline_required: [module.sig_enforce=0, rd.driver.blacklist=nouveau]"


def payload(tag: str, slash: bool = True) -> str:
    """Markup that, if it ever ran, would leave ``data-pwn<tag>`` on the page's body."""
    sep = "/" if slash else " "
    return f"<img{sep}src{sep}onerror=document.body.dataset.pwn{tag}=1>"


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    if os.geteuid() != 0:
        pytest.skip("chroot hosts need root")
    return tmp_path_factory.mktemp("hostile")


def render(roots: Path, name: str, scenario=None) -> Path:
    return rootfs.render(scenario or scenarios.build("gpu-good"), roots / name)


def profile_with(folder: Path, *, name: str | None = None, required: str | None = None) -> Path:
    text = PROFILE.read_text()
    if required is not None:
        text = text.replace(REQUIRED, f"cmdline_required: [module.sig_enforce=0, {required!r}]")
    if name is not None:
        text = text.replace("name: seed-h100", f"name: {name!r}")
    path = folder / "profile.yaml"
    path.write_text(text)
    return path


# -- finding 1: no script runs in the sign-off page --------------------------------------------
@pytest.fixture(scope="module")
def hostile_page(roots, tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile-page")
    host = render(roots, f"gpu {payload('host', slash=False)}")  # a folder name has no '/'
    prof = profile_with(folder, required=f"x={payload('param')}")
    env = {"CI_COMMIT_REF_NAME": f"feature/{payload('ref')}", "CI_JOB_NAME": payload("job")}
    r = run(folder / "reports", "-m", "node", "-k", "cmdline or reachable", *hosts_arg([host]),
            f"--profile={prof}", "--metadata", "who", payload("meta"),
            f'--metadata-from-json={{"Nested": {{"k": "{payload("nested")}"}}}}', env=env)
    assert r.proc.returncode == 1 and r.html is not None, r.output()
    r.dom = dump_dom(r.html)
    return r


VECTORS = {"host": payload("host", slash=False), "param": payload("param"), "ref": payload("ref"),
           "job": payload("job"), "meta": payload("meta"), "nested": payload("nested")}


def test_no_payload_runs_in_the_page(hostile_page):
    body = re.search(r"<body[^>]*>", hostile_page.dom).group(0)
    assert "data-pwn" not in body, body
    # the page's own scripts did run: pytest-html's rows, and ours moved the environment below them
    dom = hostile_page.dom
    assert 'class="col-check"' in dom
    assert dom.index('id="results-table"') < dom.index('id="gc-environment"') < dom.index('id="gc-signoff"')


@pytest.mark.parametrize("vector", VECTORS)
def test_every_vector_is_shown_as_text(hostile_page, vector):
    """Serialized from the DOM, text is escaped; markup that the page parsed would not be."""
    shown = VECTORS[vector].replace("<", "&lt;").replace(">", "&gt;")
    assert shown in hostile_page.dom, vector
    assert re.search(rf'<img[^>]*pwn{vector}', hostile_page.dom) is None


def test_test_id_and_environment_cells_are_escaped_by_the_suite(hostile_page):
    dom = hostile_page.dom
    cells = re.findall(r'<td class="col-testId">(.*?)</td>', dom)
    assert cells and all("&lt;img src onerror=" in c or "&lt;img/src/" in c for c in cells)
    env = dom[dom.index('id="gc-environment"'):]
    env = env[:env.index("</table>")]
    for tag in ("ref", "job", "meta", "nested"):
        assert payload(tag).replace("<", "&lt;").replace(">", "&gt;") in env, tag


def test_only_the_reports_own_scripts_may_run(hostile_page):
    page = hostile_page.page()
    csp = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', page)
    assert csp and page.index(csp.group(0)) < page.index("<script"), "the policy comes before any script"
    policy = dict(p.strip().split(" ", 1) for p in csp.group(1).split(";") if p.strip())
    assert policy["default-src"] == "'none'"
    allowed = set(policy["script-src"].split())
    assert allowed and all(a.startswith("'sha256-") for a in allowed), "no 'unsafe-inline', no hosts"
    scripts = re.findall(r"<script>(.*?)</script>", page, re.S)
    hashes = {"'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in scripts}
    assert hashes == allowed and len(scripts) == 2  # pytest-html's and the suite's


# -- finding 9: no control sequence from a host reaches the terminal ---------------------------
ESCAPES = "\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned-title\x07\x1b[2J\x9b2J\x1bP+q\x1b\\\x07\x08"


def test_terminal_gets_no_control_sequences_from_a_host(roots, tmp_path):
    s = scenarios.build("xid-in-log").clone("hostile-terminal", "GPU name and Xid text carry escapes")
    s.gpus[0].name = f"NVIDIA H100 80GB HBM3{ESCAPES}evil"
    s.dmesg.append(f"[183211.553300] NVRM: Xid (PCI:0000:5d:00): 79, {ESCAPES}pid=1, GPU has fallen off the bus.")
    host = render(roots, "hostile-terminal", s)
    r = run(tmp_path / "reports", "-m", "node", "-k", "gpu", *hosts_arg([host]), "-rA", "-v")
    out = r.proc.stdout + r.proc.stderr
    assert r.proc.returncode == 1 and "HBM3evil" in out, r.output()  # the text stays, its escapes go
    for seq in ("\x1b]", "\x1b[2J", "\x9b", "\x1bP", "\x07", "\x08"):
        assert seq not in out, repr(seq)


# -- finding 8: odd names and a refusing output path keep the reports --------------------------
def test_superscript_digit_in_host_and_parameter_keeps_the_report(roots, tmp_path):
    host = render(roots, "gpu-1²3")
    prof = profile_with(tmp_path, required="x=1²2")
    r = run(tmp_path / "reports", "-m", "node", "-k", "cmdline or reachable", *hosts_arg([host]), f"--profile={prof}")
    assert r.proc.returncode == 1 and r.doc is not None and r.html is not None, r.output()
    assert "Traceback" not in r.output()
    assert "gpu-1²3" in r.page()


def test_long_profile_name_keeps_json_and_html(roots, tmp_path):
    host = render(roots, "gpu-long-name")
    prof = profile_with(tmp_path, name="p" * 300)
    r = run(tmp_path / "reports", "-m", "node", "-k", "reachable", *hosts_arg([host]), f"--profile={prof}")
    assert r.proc.returncode == 0 and r.doc is not None and r.html is not None, r.output()
    assert r.doc["fingerprint"]["profile"] == "p" * 300
    assert len(r.json.name.encode()) <= 200 and r.html.stem == r.json.stem


def test_refused_junit_path_keeps_json_and_html(roots, tmp_path):
    host = render(roots, "gpu-junit")
    r = run(tmp_path / "reports", "-m", "node", "-k", "reachable", *hosts_arg([host]), "--junitxml=/proc/x.xml",
            env={"TMPDIR": str(tmp_path)})
    out = r.output()
    assert r.proc.returncode == 0 and r.doc is not None and r.html is not None, out
    assert "Traceback" not in out and "INTERNALERROR" not in out
    lines = [line for line in out.splitlines() if "/proc/x.xml" in line]
    assert len(lines) == 1 and "could not write" in lines[0], lines
    moved = Path(lines[0].rsplit("it is ", 1)[1])  # JUnit itself is kept, where the line says
    assert moved.is_relative_to(tmp_path) and ET.parse(moved).getroot().find("testsuite").get("tests") == "1"
