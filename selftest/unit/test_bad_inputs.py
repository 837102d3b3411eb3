"""Every input is validated once, before anything runs: a mistake is ONE line naming the input,
exit code 4, no traceback, no report. Each case is a real run of the suite in a subprocess."""
from __future__ import annotations

import os
import re
import shutil
import textwrap

import pytest

from runner import REPO, run_suite

GOOD_PROFILE = (REPO / "profiles" / "seed-h100.yaml").read_text()
KUBEFLOW = "kubeflow:\n  url: https://kubeflow.example/\n"


#: each level doubles the one below: 2**30 strings once expanded, a few lines as written
ALIAS_BOMB = "name: t\na0: &a0 [x, x]\n" + "".join(f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}]\n" for i in range(1, 30))
KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: bed, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: bed, context: {cluster: bed, user: u}}]
current-context: bed
"""

#: a valid ai_conformance section (gpuconform/aiconformance/README.md)
AICONF = """ai_conformance:
  checklist: "1.36"
  product:
    platform_name: Seed ML Platform
    platform_version: "2.3"
    vendor_name: Example Bank
    website_url: https://ml.example.com
    documentation_url: https://ml.example.com/docs
    product_logo_url: https://ml.example.com/logo.svg
    description: Bare-metal GPU Kubernetes.
    contact_email_address: ml-platform@example.com
    k8s_conformance_url: https://github.com/cncf/k8s-conformance/tree/master/v1.36/seed
"""
SMALL_PROFILE = "name: t\nnode:\n  driver: {version: 580.95.05}\n  gpu: {product: NVIDIA H100 80GB HBM3, count: 8}\n"


def profile_with(extra: str = "", replace: tuple[str, str] | None = None) -> str:
    """The shipped profile with one text replaced, or a small valid profile with more keys."""
    if replace is not None:
        assert replace[0] in GOOD_PROFILE
        return GOOD_PROFILE.replace(*replace)
    return SMALL_PROFILE + textwrap.dedent(extra)


# (id, files to create {name: text | "fifo" | "dir"}, args ({d} = the folder of the files), what the line says)
CASES = [
    # host specs
    ("hosts-unknown-scheme", {}, ["--hosts=foo://bar"], r"--hosts foo://bar: unknown connection type 'foo'"),
    ("hosts-open-ipv6", {}, ["--hosts=ssh://root@[::1"], r"--hosts ssh://root@\[::1: not a host spec \(Invalid IPv6 URL\)"),
    ("hosts-empty", {}, ["--hosts="], r"--hosts '': an empty host"),
    ("hosts-comma", {}, ["--hosts=,"], r"--hosts ',': an empty host"),
    ("hosts-double-comma", {}, ["--hosts=ssh://a,,ssh://b"], r"--hosts 'ssh://a,,ssh://b': an empty host"),
    ("hosts-no-name", {}, ["--hosts=ssh://"], r"--hosts ssh://: no host name"),
    ("hosts-user-no-name", {}, ["--hosts=ssh://root@"], r"--hosts ssh://root@: no host name"),
    ("hosts-port-range", {}, ["--hosts=ssh://root@gpu-1:99999"], r"--hosts ssh://root@gpu-1:99999: not a host spec \(Port out of range"),
    ("hosts-port-text", {}, ["--hosts=paramiko://gpu-1:ssh"], r"--hosts paramiko://gpu-1:ssh: not a host spec \(Port could not be cast"),
    ("hosts-port-zero", {}, ["--hosts=ssh://gpu-1:0"], r"--hosts ssh://gpu-1:0: port 0 is not in 1-65535"),
    ("hosts-chroot-missing", {}, ["--connection=chroot", "--hosts={d}/no-such-root"], r"--hosts {d}/no-such-root: a chroot host is a directory"),
    ("hosts-chroot-mixed", {"root": "dir"}, ["--hosts=chroot://{d}/root,ssh://gpu-1"], r"--hosts: chroot:///PATH hosts cannot be mixed"),
    ("profile-hosts-bad", {"p.yaml": profile_with("hosts: [foo://bar]\n")}, ["--profile={d}/p.yaml", "NOHOSTS"],
     r"{d}/p.yaml: hosts: foo://bar: unknown connection type 'foo'"),
    # a host spec reaches ssh as an argument: one that starts with '-' is an option (issue #28, 11)
    ("hosts-ssh-option", {}, ["--hosts=ssh://-oproxycommand=touch%20{d}/ran"], r"--hosts ssh://-oproxycommand=touch%20{d}/ran: the host name starts with '-'"),
    ("hosts-ssh-option-user", {}, ["--hosts=ssh://-oProxyCommand=x@gpu-1"], r"--hosts ssh://-oProxyCommand=x@gpu-1: the user starts with '-'"),
    ("hosts-ssh-option-encoded", {}, ["--hosts=paramiko://%2DoProxyCommand=x"], r"--hosts paramiko://%2DoProxyCommand=x: the host name starts with '-'"),
    ("hosts-sudo-user-option", {}, ["--hosts=ssh://gpu-1?sudo_user=-s"], r"--hosts ssh://gpu-1\?sudo_user=-s: the sudo_user starts with '-'"),
    ("hosts-timeout-text", {}, ["--hosts=ssh://gpu-1?timeout=abc"], r"--hosts ssh://gpu-1\?timeout=abc: \?timeout='abc' is not a whole number of seconds"),
    ("hosts-timeout-negative", {}, ["--hosts=ssh://gpu-1?timeout=-5"], r"--hosts ssh://gpu-1\?timeout=-5: \?timeout='-5' is not a whole number of seconds"),
    ("profile-hosts-ssh-option", {"p.yaml": profile_with("hosts: ['ssh://-oproxycommand=x']\n")}, ["--profile={d}/p.yaml", "NOHOSTS"],
     r"{d}/p.yaml: hosts: ssh://-oproxycommand=x: the host name starts with '-'"),
    # the profile file itself
    ("profile-dev-zero", {}, ["--profile=/dev/zero"], r"/dev/zero: cannot read profile: it is a device, not a regular file"),
    ("profile-fifo", {"p.yaml": "fifo"}, ["--profile={d}/p.yaml"], r"{d}/p.yaml: cannot read profile: it is a FIFO, not a regular file"),
    ("profile-directory", {}, ["--profile={d}"], r"{d}: cannot read profile: it is a directory"),
    ("profile-missing", {}, ["--profile={d}/none.yaml"], r"{d}/none.yaml: cannot read profile: No such file or directory"),
    ("profile-too-big", {"p.yaml": "# " + "x" * (5 << 20) + "\n"}, ["--profile={d}/p.yaml"], r"{d}/p.yaml: cannot read profile: \d+ bytes, more than 4 MiB"),
    ("profile-empty", {"p.yaml": ""}, ["--profile={d}/p.yaml"], r"{d}/p.yaml: expected a mapping at the top level, got NoneType"),
    ("profile-list", {"p.yaml": "- a\n- b\n"}, ["--profile={d}/p.yaml"], r"{d}/p.yaml: expected a mapping at the top level, got list"),
    ("profile-not-yaml", {"p.yaml": "name: [x\n"}, ["--profile={d}/p.yaml"], r"{d}/p.yaml: not valid YAML at line \d+, column \d+"),
    ("profile-nul-bytes", {"p.yaml": "name: a\0b\n"}, ["--profile={d}/p.yaml"], r"{d}/p.yaml: not valid YAML: .*#x0000"),
    ("profile-duplicate-key", {"p.yaml": profile_with("name: again\n")}, ["--profile={d}/p.yaml"], r"{d}/p.yaml: not valid YAML at line \d+, column 1: duplicate key 'name'"),
    ("profile-duplicate-nested", {"p.yaml": profile_with(replace=("  os_family: rhel\n", "  os_family: rhel\n  os_family: debian\n"))},
     ["--profile={d}/p.yaml"], r"{d}/p.yaml: not valid YAML at line \d+, column 3: duplicate key 'os_family'"),
    ("profile-impossible-date", {"p.yaml": profile_with("description: 2026-13-45\n")}, ["--profile={d}/p.yaml"],
     r"{d}/p.yaml: not valid YAML at line \d+, column \d+: '2026-13-45' is not a date \(month must be in 1..12\)"),
    ("profile-env-directory", {}, ["ENV:GPUCONFORM_PROFILE={d}"], r"{d}: cannot read profile: it is a directory"),
    ("kubeflow-url-open-ipv6", {"p.yaml": profile_with("kubeflow: {url: 'https://[::1/'}\n")}, ["--profile={d}/p.yaml"], r"kubeflow.url: Value error, not a URL \(Invalid IPv6 URL\)"),
    ("kubeflow-url-port", {"p.yaml": profile_with("kubeflow: {url: 'https://kf.example:99999/'}\n")}, ["--profile={d}/p.yaml"], r"kubeflow.url: Value error, not a URL \(Port out of range"),
    ("kubeflow-url-http", {"p.yaml": profile_with("kubeflow: {url: 'http://kf.example/'}\n")}, ["--profile={d}/p.yaml"], r"kubeflow.url: Value error, https://<host>\[:port\]/"),
    ("kubeflow-url-path", {"p.yaml": profile_with("kubeflow: {url: 'https://kf.example/dex'}\n")}, ["--profile={d}/p.yaml"], r"kubeflow.url: Value error, https://<host>\[:port\]/"),
    ("kubeflow-url-credentials", {"p.yaml": profile_with("kubeflow: {url: 'https://u:p@kf.example/'}\n")}, ["--profile={d}/p.yaml"], r"kubeflow.url: Value error, https://<host>\[:port\]/ \(no path, query or credentials\)"),
    ("kubeflow-ca-missing", {"p.yaml": profile_with(KUBEFLOW + "  ca_bundle: /nonexistent/ca.pem\n")}, ["--profile={d}/p.yaml"], r"kubeflow.ca_bundle: Value error, /nonexistent/ca.pem: no such file"),
    ("kubeflow-ca-directory", {"p.yaml": profile_with(KUBEFLOW + "  ca_bundle: /tmp\n")}, ["--profile={d}/p.yaml"], r"kubeflow.ca_bundle: Value error, /tmp: a directory, not a file"),
    ("kubeflow-password-file", {"p.yaml": profile_with(KUBEFLOW + "  account: {password_file: /nonexistent/pw}\n")}, ["--profile={d}/p.yaml"],
     r"kubeflow.account.password_file: Value error, /nonexistent/pw: no such file"),
    ("group-bad-fnmatch", {"p.yaml": profile_with(replace=('"gpu-mig-*"', '"gpu-[mig"'))}, ["--profile={d}/p.yaml"],
     r"groups.0.match.0: Value error, 'gpu-\[mig': '\[' without its '\]' \(fnmatch pattern\)"),
    ("mig-config-bad-fnmatch", {"p.yaml": profile_with("cluster: {gpu_workers: {mig_configs: [{match: ['node-[[a]'], config: all-1g.10gb}]}}\n")},
     ["--profile={d}/p.yaml"], r"cluster.gpu_workers.mig_configs.0.match.0: Value error, 'node-\[\[a\]': '\[' inside"),
    ("timeouts-negative", {"p.yaml": profile_with(replace=("probe_s: 120", "probe_s: -1"))}, ["--profile={d}/p.yaml"], r"timeouts.probe_s: Input should be greater than 0"),
    ("timeouts-ssh-zero", {"p.yaml": profile_with(replace=("ssh_connect_s: 10", "ssh_connect_s: 0"))}, ["--profile={d}/p.yaml"], r"timeouts.ssh_connect_s: Input should be greater than 0"),
    # waivers
    ("waivers-impossible-date", {"w.yaml": "waivers:\n  - {check: a, reason: why not, owner: me, expires: 2026-02-30}\n"}, ["--waivers={d}/w.yaml"],
     r"{d}/w.yaml: not valid YAML at line 2, column \d+: '2026-02-30' is not a date \(day is out of range for month\)"),
    ("waivers-duplicate-key", {"w.yaml": "waivers:\n  - {check: a, check: b, reason: why not, owner: me, expires: 2099-01-01}\n"}, ["--waivers={d}/w.yaml"],
     r"{d}/w.yaml: not valid YAML at line 2, column \d+: duplicate key 'check'"),
    ("waivers-fifo", {"w.yaml": "fifo"}, ["--waivers={d}/w.yaml"], r"{d}/w.yaml: cannot read waiver file: it is a FIFO"),
    ("waivers-list", {"w.yaml": "- a\n"}, ["--waivers={d}/w.yaml"], r"{d}/w.yaml: expected a mapping with a `waivers:` list at the top level"),
    # kubeconfig
    ("kubeconfig-not-yaml", {"kc": "apiVersion: v1\nclusters: [\n"}, ["--kubeconfig={d}/kc"], r"{d}/kc: not valid YAML at line \d+, column \d+"),
    ("kubeconfig-missing", {}, ["--kubeconfig={d}/none"], r"{d}/none: cannot read kubeconfig \(--kubeconfig\): No such file or directory"),
    ("kubeconfig-directory", {}, ["--kubeconfig={d}"], r"{d}: cannot read kubeconfig \(--kubeconfig\): it is a directory"),
    # report name and folder
    ("report-name-escapes", {}, ["--report-name=../../x"], r"--report-name '../../x': a plain file name"),
    ("report-name-folder", {}, ["--report-name=a/b"], r"--report-name 'a/b': a plain file name"),
    ("report-name-hidden", {}, ["--report-name=.x"], r"--report-name '.x': a plain file name"),
    ("report-name-empty", {}, ["--report-name="], r"--report-name '': a plain file name"),
    ("report-name-long", {}, ["--report-name=" + "n" * 250], r"--report-name: 250 bytes long; at most 200"),
    ("report-dir-is-file", {"f": "x"}, ["--report-dir={d}/f"], r"--report-dir {d}/f: exists and is not a directory"),
    # remediation changes hosts only when told which checks to fix
    ("remediate-apply-unnamed", {}, ["--remediate=apply"], r"--remediate=apply changes hosts: name the checks to fix"),
    ("remediate-unknown-check", {}, ["--remediate=plan", "--remediate-checks=node.gpu.count"],
     r"--remediate-checks: node.gpu.count has no companion script; known: all, "),
    ("remediate-checks-alone", {}, ["--remediate-checks=all"], r"--remediate-checks needs --remediate=plan or --remediate=apply"),
    ("report-dir-unwritable", {}, ["--report-dir=/sys"], r"--report-dir /sys: cannot write there: Permission denied"),
    ("report-dir-under-file", {"f": "x"}, ["--report-dir={d}/f/reports"], r"--report-dir {d}/f/reports: cannot write there: Not a directory"),
    # ssh files
    ("ssh-config-missing", {}, ["--ssh-config={d}/none"], r"{d}/none: cannot read --ssh-config: No such file or directory"),
    ("ssh-identity-directory", {}, ["--ssh-identity-file={d}"], r"{d}: cannot read --ssh-identity-file: it is a directory"),
    # issue 28: files that never end or never stop (one gate: regular file, size cap, bounded read)
    ("baseline-fifo", {"b.json": "fifo"}, ["--baseline={d}/b.json"], r"--baseline={d}/b.json: cannot read it: it is a FIFO, not a regular file"),
    ("baseline-dev-zero", {}, ["--baseline=/dev/zero"], r"--baseline=/dev/zero: cannot read it: it is a device, not a regular file"),
    ("kubeconfig-env-fifo", {"kc": "fifo"}, ["ENV:KUBECONFIG={d}/kc"], r"{d}/kc: cannot read kubeconfig \(\$KUBECONFIG\): it is a FIFO"),
    ("kubeconfig-env-dev-zero", {}, ["ENV:KUBECONFIG=/dev/zero"], r"/dev/zero: cannot read kubeconfig \(\$KUBECONFIG\): it is a device"),
    # issue 28: profile numbers with bounds, the YAML loader with bounds
    ("gpu-count-huge", {"p.yaml": profile_with(replace=("count: 8", "count: 1000000000"))}, ["--profile={d}/p.yaml"],
     r"{d}/p.yaml: node.gpu.count: Input should be less than or equal to \d+, got 1000000000"),
    ("timeouts-probe-inf", {"p.yaml": profile_with(replace=("probe_s: 120", "probe_s: .inf"))}, ["--profile={d}/p.yaml"],
     r"{d}/p.yaml: timeouts.probe_s: Input should be a finite number"),
    ("timeouts-probe-1e300", {"p.yaml": profile_with(replace=("probe_s: 120", "probe_s: 1e300"))}, ["--profile={d}/p.yaml"],
     r"{d}/p.yaml: timeouts.probe_s: Input should be less than or equal to \d+"),
    ("timeouts-ssh-2-70", {"p.yaml": profile_with(replace=("ssh_connect_s: 10", f"ssh_connect_s: {2 ** 70}"))}, ["--profile={d}/p.yaml"],
     r"{d}/p.yaml: timeouts.ssh_connect_s: Input should be less than or equal to \d+"),
    ("profile-alias-bomb", {"p.yaml": ALIAS_BOMB}, ["--profile={d}/p.yaml"], r"{d}/p.yaml: not valid YAML at line \d+, column \d+: aliases expand to more than \d+ nodes"),
    ("profile-alias-recursive", {"p.yaml": "name: &a [*a]\n"}, ["--profile={d}/p.yaml"], r"{d}/p.yaml: not valid YAML at line 1, column \d+: an alias that contains itself"),
    ("profile-deep", {"p.yaml": "name: t\nx: " + "[" * 5000 + "]" * 5000 + "\n"}, ["--profile={d}/p.yaml"],
     r"{d}/p.yaml: not valid YAML at line 2, column \d+: nested more than 64 levels deep"),
    ("profile-deep-block", {"p.yaml": "name: t\n" + "".join(" " * i + f"k{i}:\n" for i in range(2000))}, ["--profile={d}/p.yaml"],
     r"{d}/p.yaml: not valid YAML at line \d+, column \d+: nested more than 64 levels deep"),
    ("waivers-deep", {"w.yaml": "waivers: " + "[" * 5000 + "]" * 5000 + "\n"}, ["--waivers={d}/w.yaml"],
     r"{d}/w.yaml: not valid YAML at line 1, column \d+: nested more than 64 levels deep"),
    ("kubeconfig-deep", {"kc": "apiVersion: v1\nclusters: " + "[" * 5000 + "]" * 5000 + "\n"}, ["--kubeconfig={d}/kc"],
     r"{d}/kc: not valid YAML at line 2, column \d+: nested more than 64 levels deep"),
    ("baseline-deep", {"b.json": "[" * 100000 + "]" * 100000}, ["--baseline={d}/b.json"], r"--baseline={d}/b.json: not JSON \(nested too deeply\)"),
    # issue 28: bad input reported as such, not as a cluster failure or a silent default
    ("kubeconfig-context-unknown", {"kc": KUBECONFIG}, ["--kubeconfig={d}/kc", "--context=nope"],
     r"--context=nope: no such context in {d}/kc \(its contexts: bed\)"),
    ("kubeconfig-server-malformed", {"kc": KUBECONFIG.replace("https://127.0.0.1:6443", "https://[::1:6443")}, ["--kubeconfig={d}/kc"],
     r"{d}/kc: clusters\[bed\].server 'https://\[::1:6443': not a URL \(Invalid IPv6 URL\)"),
    ("kubeconfig-server-not-http", {"kc": KUBECONFIG.replace("https://127.0.0.1:6443", "127.0.0.1:6443")}, ["ENV:KUBECONFIG={d}/kc"],
     r"{d}/kc: clusters\[bed\].server '127.0.0.1:6443': not an https:// or http:// URL"),
    ("profile-option-empty", {}, ["--profile="], r"--profile / \$GPUCONFORM_PROFILE: empty; name a profile file"),
    ("profile-env-empty", {}, ["ENV:GPUCONFORM_PROFILE="], r"--profile / \$GPUCONFORM_PROFILE: empty; name a profile file"),
    ("waivers-host-bad-pattern", {"w.yaml": "waivers:\n  - {check: a, host: 'gpu-[1', reason: why not, owner: me, expires: 2099-01-01}\n"},
     ["--waivers={d}/w.yaml"], r"{d}/w.yaml: waivers.0.host: Value error, 'gpu-\[1': '\[' without its '\]' \(fnmatch pattern\)"),
    ("report-name-newline", {}, ["--report-name=a\nb"], r"--report-name 'a\\nb': a plain file name"),
    # the AI conformance export (--ai-conformance, profile ai_conformance:)
    ("aiconf-placeholder", {"p.yaml": profile_with(AICONF.replace("vendor_name: Example Bank", "vendor_name: '[Vendor Name]'"))},
     ["--profile={d}/p.yaml"], r"{d}/p.yaml: ai_conformance.product.vendor_name: Value error, '\[Vendor Name\]' is the checklist's placeholder"),
    ("aiconf-k8s-conformance-url", {"p.yaml": profile_with(AICONF.replace("tree/master/v1.36/seed", "blob/x"))},
     ["--profile={d}/p.yaml"], r"{d}/p.yaml: ai_conformance.product.k8s_conformance_url: Value error, https://github.com/cncf/k8s-conformance/tree/master/vX.Y/<product>"),
    ("aiconf-unknown-requirement", {"p.yaml": profile_with(AICONF + "  requirements: {gang_schedulng: {status: Implemented, notes: Kueue}}\n")},
     ["--profile={d}/p.yaml"], r"{d}/p.yaml: ai_conformance.requirements: Value error, 'gang_schedulng': not a requirement of checklist 1.36"),
    ("aiconf-status", {"p.yaml": profile_with(AICONF + "  requirements: {gang_scheduling: {status: Done, notes: Kueue}}\n")},
     ["--profile={d}/p.yaml"], r"{d}/p.yaml: ai_conformance.requirements.gang_scheduling.status: Input should be 'Implemented', 'Not Implemented', 'Partially Implemented' or 'N/A', got 'Done'"),
    ("aiconf-na-without-notes", {"p.yaml": profile_with(AICONF + "  requirements: {cluster_autoscaling: {status: N/A}}\n")},
     ["--profile={d}/p.yaml"], r"{d}/p.yaml: ai_conformance.requirements.cluster_autoscaling.notes: Field required"),
    ("aiconf-checklist", {"p.yaml": profile_with(AICONF.replace('"1.36"', '"1.30"'))},
     ["--profile={d}/p.yaml"], r"{d}/p.yaml: ai_conformance.checklist: Value error, no checklist '1.30': one of 1.33, 1.34, 1.35, 1.36"),
    ("aiconf-no-product", {"p.yaml": profile_with()}, ["--profile={d}/p.yaml", "--ai-conformance={d}/out"],
     r"--ai-conformance: {d}/p.yaml: ai_conformance.product: the product's metadata is required"),
    ("aiconf-dir-is-file", {"p.yaml": profile_with(AICONF), "f": "x"}, ["--profile={d}/p.yaml", "--ai-conformance={d}/f"],
     r"--ai-conformance {d}/f: exists and is not a directory"),
    ("aiconf-no-reports", {"p.yaml": profile_with(AICONF)}, ["--profile={d}/p.yaml", "--ai-conformance={d}/out", "--no-reports"],
     r"--ai-conformance: the run's reports are its evidence: drop --no-reports"),
    ("profile-typo-secret-not-echoed", {"p.yaml": profile_with(KUBEFLOW + "  account: {pasword: Pl4ntTypoValue}\n")}, ["--profile={d}/p.yaml"],
     r"{d}/p.yaml: kubeflow.account.pasword: unknown field \(a typo\?\)$"),
]


def make_files(folder, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        if text == "fifo":
            os.mkfifo(path)
        elif text == "dir":
            path.mkdir()
        else:
            path.write_text(text)


@pytest.mark.parametrize("files, args, line", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_exit_4(tmp_path, files, args, line):
    make_files(tmp_path, files)
    env = {a[4:].split("=", 1)[0]: a[4:].split("=", 1)[1].format(d=tmp_path) for a in args if a.startswith("ENV:")}
    args = [a.format(d=tmp_path) for a in args if not a.startswith("ENV:")]
    if "NOHOSTS" in args:  # the profile names the hosts
        args.remove("NOHOSTS")
    elif not any(a.startswith("--hosts") for a in args):
        args = ["--hosts=local://", *args]
    proc, doc = run_suite("-m", "node", *args, report_dir=tmp_path / "reports", timeout=60, env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 4, out[-3000:]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ERROR: "), out[-3000:]
    assert re.search(line.format(d=re.escape(str(tmp_path))), lines[0]), lines[0]
    assert "Traceback" not in out and "INTERNALERROR" not in out and doc is None
    assert "Pl4nt" not in out  # a secret-looking value is never echoed


def test_there_are_at_least_40_cases():
    assert len(CASES) >= 40 and len({c[0] for c in CASES}) == len(CASES)


def test_profile_given_with_a_space_outside_the_checkout_is_one_line(tmp_path):
    """``--profile /elsewhere/p.yaml`` moves pytest's rootdir out of the checkout, so the suite's
    settings go unread (it used to give a KeyError in every test file)."""
    prof = tmp_path / "elsewhere" / "p.yaml"
    prof.parent.mkdir()
    prof.write_text(SMALL_PROFILE)
    proc, doc = run_suite("-m", "node", "--hosts=local://", "--profile", str(prof),
                          report_dir=tmp_path / "reports", timeout=120)
    assert proc.returncode == 4 and doc is None, proc.stdout[-3000:] + proc.stderr
    # where pytest puts its rootdir depends on where the checkout lies (a clone under /tmp: /tmp)
    line = re.fullmatch(r"ERROR: pytest took (\S+) for the rootdir, from an option value given with a space: "
                        r"write options with '=' \(--profile=PATH\)", proc.stderr.strip())
    assert line, proc.stderr
    assert line.group(1) != str(REPO), "the rootdir stayed the checkout: nothing to report"


BLOCK_REPORT_DIR = '''
import shutil, pytest

def pytest_collection_finish(session):
    """The report folder turns into a file while the checks run."""
    folder = session.config.option.gpuconform_report_dir
    shutil.rmtree(folder)
    open(folder, "w").close()
'''


def test_report_folder_lost_during_the_run_reports_elsewhere_and_says_where(tmp_path):
    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "block_report_dir.py").write_text(BLOCK_REPORT_DIR)
    proc, _ = run_suite("-m", "node", "--hosts=local://", "-k", "reachable", "-p", "block_report_dir",
                        report_dir=tmp_path / "reports", timeout=120,
                        env={"PYTHONPATH": str(tmp_path / "plug")})
    out = proc.stdout + proc.stderr
    said = re.search(r"gpuconform: could not write \S+/reports/(\S+)\.json \(Not a directory\); "
                     r"the reports are in (\S+)", proc.stdout)
    assert said, out[-3000:]
    fallback = REPO.joinpath(said.group(2))
    written = [(fallback / f"{said.group(1)}.{ext}").is_file() for ext in ("json", "html")]
    shutil.rmtree(fallback)
    assert written == [True, True]
    assert "Traceback" not in out and proc.returncode == 0, out[-3000:]
