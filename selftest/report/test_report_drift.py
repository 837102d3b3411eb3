"""Drift since the last accepted run (--baseline, --fail-on-drift), the first screen, the cluster's
GPU nodes in the MIG picture, and a page that grows with failures, not with hosts × checks."""
from __future__ import annotations

import pytest

from gpuconform.report import fingerprint, html
from report_harness import dump_dom, hosts_arg, run
from testbed.hosts import rootfs, scenarios
from testbed.hosts.scenarios import DRIVER, OTHER_DRIVER


@pytest.fixture(scope="module")
def farm(host_roots, tmp_path_factory):
    """Host names (links) whose scenario a test can swap, as a host is reinstalled between runs."""
    base = tmp_path_factory.mktemp("farm")
    roots = dict(host_roots)
    roots["driver-wrong-version"] = rootfs.render(scenarios.build("driver-wrong-version"), base / "driver-wrong")
    links = base / "hosts"
    links.mkdir()

    def hosts(**scenario_of: str) -> list:
        out = []
        for name, scenario in scenario_of.items():
            link = links / name
            if link.is_symlink():
                link.unlink()
            link.symlink_to(roots[scenario])
            out.append(link)
        return out
    return hosts


@pytest.fixture(scope="module")
def baseline(farm, tmp_path_factory):
    """The last accepted run: three good hosts."""
    folder = tmp_path_factory.mktemp("baseline")
    r = run(folder, "-m", "node", *hosts_arg(farm(h1="gpu-good", h2="gpu-good", h3="gpu-good")))
    assert r.doc is not None and r.doc["verdict"]["word"] == "ACCEPTED", r.output()
    return r


@pytest.fixture(scope="module")
def drifted(farm, baseline, tmp_path_factory):
    """The night after: h2 got another driver (and fails its version check), h3 is gone, two
    new hosts carry the same DKMS fault."""
    hosts = farm(h1="gpu-good", h2="driver-wrong-version", h4="dkms-added", h5="dkms-added")
    r = run(tmp_path_factory.mktemp("drifted"), "-m", "node", *hosts_arg(hosts), f"--baseline={baseline.json}")
    assert r.doc is not None, r.output()
    r.dom = dump_dom(r.html)
    return r


def test_drift_shows_changed_driver_and_newly_failing_check_at_the_top(drifted, baseline):
    doc, dom = drifted.doc, drifted.dom
    d = doc["drift"]
    h2 = next(h for h in doc["fingerprint"]["hosts"] if h["host"].endswith("/h2"))["host"]
    assert {"kind": "driver", "host": h2, "was": DRIVER, "now": OTHER_DRIVER} in d["facts"]
    failing = {(c["check_id"], c["host"]): c for c in d["newly_failing"]}
    assert failing[("node.driver.version", h2)]["was"] == "pass"
    assert not any(host.endswith(("/h4", "/h5")) for _, host in failing)  # new hosts: "added", not "newly failing"
    assert [h.rsplit("/", 1)[1] for h in d["hosts_added"]] == ["h4", "h5"]
    assert [h.rsplit("/", 1)[1] for h in d["hosts_removed"]] == ["h3"]
    assert d["baseline_started"] == baseline.doc["fingerprint"]["started"] and d["failing"] == []
    # in the page, read back from the DOM: right after the verdict and what must be fixed, before the matrix
    assert dom.index('id="gc-verdict"') < dom.index('id="gc-fix"') < dom.index('id="gc-drift"') < dom.index('id="gc-matrix"')
    block = dom[dom.index('id="gc-drift"'):dom.index('id="gc-layers"')]
    date = baseline.doc["fingerprint"]["started"].replace("T", " ").replace("+00:00", " UTC")
    assert f"Changed since {date}" in block
    fact = next(row for row in block.split("<tr ") if row.startswith('data-kind="driver"'))
    assert h2 in fact and f"{DRIVER} → <b>{OTHER_DRIVER}</b>" in fact
    newly = block[block.index('id="gc-drift-newly_failing"'):]
    newly = newly[:newly.index("</table>")]
    anchor = failing[("node.driver.version", h2)]["anchor"]
    assert f'<a href="#{anchor}">node.driver.version</a>' in newly and "pass → <b>fail</b>" in newly
    assert f'<a id="{anchor}"></a>' in dom  # the link leads to the result's row
    assert "h3" in block[block.index('id="gc-drift-hosts_removed"'):][:300]


def test_first_screen_groups_a_failure_of_several_hosts(drifted):
    dom = drifted.dom
    fix = dom[dom.index('id="gc-fix"'):dom.index('id="gc-drift"')]
    row = fix[fix.index('<tr data-check="node.dkms.nvidia_installed" data-verdict="fail"'):]
    row = row[:row.index("</tr>")]
    hosts = {r["host"] for r in drifted.doc["results"]
             if r["check_id"] == "node.dkms.nvidia_installed" and r["verdict"] == "fail"}
    assert {h.rsplit("/", 1)[1] for h in hosts} >= {"h4", "h5"}
    assert f'data-hosts="{len(hosts)}"' in row and all(f'title="{h}"' in row for h in hosts)
    assert "dkms install" in row  # the fix


def test_drift_alone_fails_only_the_kinds_named(farm, baseline, tmp_path):
    hosts = hosts_arg(farm(h1="gpu-good"))
    quiet = run(tmp_path / "quiet", "-m", "node", *hosts, f"--baseline={baseline.json}")
    assert quiet.doc["verdict"]["word"] == "ACCEPTED" and quiet.proc.returncode == 0, quiet.output()
    assert len(quiet.doc["drift"]["hosts_removed"]) == 2 and quiet.doc["drift"]["facts"] == []
    strict = run(tmp_path / "strict", "-m", "node", *hosts, f"--baseline={baseline.json}",
                 "--fail-on-drift=driver,hosts_removed")
    d = strict.doc["drift"]
    assert d["fail_on"] == ["driver", "hosts_removed"] and d["failing"] == ["hosts_removed"]
    assert strict.doc["verdict"]["word"] == "REJECTED" and strict.proc.returncode == 1, strict.output()
    assert strict.doc["verdict"]["reasons"] == ["drift since the baseline (--fail-on-drift): hosts_removed"]
    assert "fails the run (--fail-on-drift)" in strict.html.read_text()


@pytest.mark.parametrize("content, args, says", [
    (None, (), "--baseline={path}: cannot read it"),
    ("not json {", (), "--baseline={path}: not JSON"),
    ('{"schema": "someone-else/v1"}', (), "--baseline={path}: schema 'someone-else/v1' is not a gpuconform results file"),
    ('{"schema": "gpuconform/results/v3", "verdict": {}}', (), "--baseline={path}: verdict.word: Field required"),
    ("GOOD", ("--fail-on-drift=driver,firmware",), "--fail-on-drift=driver,firmware: unknown kind 'firmware'"),
])
def test_bad_baseline_is_one_line_exit_4(baseline, tmp_path, content, args, says):
    path = tmp_path / "baseline.json"
    if content == "GOOD":
        path.write_bytes(baseline.json.read_bytes())
    elif content is not None:
        path.write_text(content)
    r = run(tmp_path / "reports", "-m", "node", "--hosts=local://", f"--baseline={path}", *args)
    out = r.proc.stdout + r.proc.stderr
    assert r.proc.returncode == 4, out
    assert says.format(path=path) in out and "Traceback" not in out, out
    assert r.doc is None


def test_newly_passing_fails_a_run_only_when_named(farm, tmp_path):
    """--fail-on-drift=all rejects what got worse, not a check that was fixed (issue #25)."""
    broken = run(tmp_path / "broken", "-m", "node", *hosts_arg(farm(h1="dkms-added")))
    assert broken.doc["verdict"]["word"] == "REJECTED", broken.output()
    fixed_hosts = hosts_arg(farm(h1="gpu-good"))
    forced = ("--force-baseline", f"--baseline={broken.json}")
    everything = run(tmp_path / "all", "-m", "node", *fixed_hosts, *forced, "--fail-on-drift=all")
    d = everything.doc["drift"]
    assert d["newly_passing"] and "newly_passing" not in d["fail_on"] and d["failing"] == [], everything.output()
    assert everything.doc["verdict"]["word"] == "ACCEPTED" and everything.proc.returncode == 0, everything.output()
    named = run(tmp_path / "named", "-m", "node", *fixed_hosts, *forced, "--fail-on-drift=all,newly_passing")
    assert named.doc["drift"]["failing"] == ["newly_passing"] and named.proc.returncode == 1, named.output()


def test_a_rejected_run_is_a_baseline_only_when_forced(farm, tmp_path):
    broken = run(tmp_path / "broken", "-m", "node", *hosts_arg(farm(h1="dkms-added")))
    hosts = hosts_arg(farm(h1="gpu-good"))
    refused = run(tmp_path / "refused", "-m", "node", *hosts, f"--baseline={broken.json}")
    out = refused.proc.stdout + refused.proc.stderr
    assert refused.proc.returncode == 4 and "that run was REJECTED" in out and "--force-baseline" in out, out
    forced = run(tmp_path / "forced", "-m", "node", *hosts, f"--baseline={broken.json}", "--force-baseline")
    assert forced.proc.returncode == 0, forced.output()
    assert "compared with a REJECTED run as baseline (--force-baseline)" in forced.proc.stdout
    assert "not an accepted run</b>, compared because of --force-baseline" in forced.html.read_text()


def test_a_baseline_is_keyed_by_the_profile_name(farm, baseline, tmp_path):
    """The last accepted run of another profile is no baseline (issue #25): refused in one line
    unless --force-baseline, which the terminal and the report then say."""
    from gpuconform.resources import example_profile_path
    other = tmp_path / "pool-b.yaml"
    other.write_text(example_profile_path("seed-h100.yaml").read_text().replace("name: seed-h100", "name: seed-h100-pool-b", 1))
    hosts = hosts_arg(farm(h1="gpu-good"))
    refused = run(tmp_path / "refused", "-m", "node", *hosts, f"--profile={other}", f"--baseline={baseline.json}")
    out = refused.proc.stdout + refused.proc.stderr
    assert refused.proc.returncode == 4 and refused.doc is None, out
    assert (f"--baseline={baseline.json}: that run judged profile 'seed-h100', this run judges 'seed-h100-pool-b'"
            in out and "--force-baseline" in out), out
    forced = run(tmp_path / "forced", "-m", "node", *hosts, f"--profile={other}", f"--baseline={baseline.json}",
                 "--force-baseline")
    assert forced.proc.returncode == 0 and forced.doc["drift"]["baseline_profile"] == "seed-h100", forced.output()
    assert "compared with a run of profile 'seed-h100' as baseline (--force-baseline)" in forced.proc.stdout
    assert "a run of another profile (seed-h100)</b>, compared because of --force-baseline" in forced.html.read_text()


def test_fail_on_drift_needs_a_baseline(tmp_path):
    r = run(tmp_path, "-m", "node", "--hosts=local://", "--fail-on-drift=driver")
    assert r.proc.returncode == 4 and "--fail-on-drift=driver: needs --baseline" in r.proc.stderr, r.output()


def test_page_grows_with_failures_not_with_hosts(farm, tmp_path):
    """Twice the good hosts add a matrix column each, not a results row each; a failing host
    adds its failures with their evidence."""
    def size(label, **hosts):
        r = run(tmp_path / label, "-m", "node", *hosts_arg(farm(**hosts)))
        assert r.doc is not None, r.output()
        passes = [x for x in r.doc["results"] if x["verdict"] == "pass"]
        assert sum(bool(x["evidence"]) for x in passes) > len(passes) / 2  # the JSON keeps the passes' evidence
        return r.html.stat().st_size, r.doc
    good = {f"g{i:02d}": "gpu-good" for i in range(8)}
    more = {f"g{i:02d}": "gpu-good" for i in range(8, 16)}
    small, doc = size("good8", **good)
    big, _ = size("good16", **good, **more)
    per_result = small / len(doc["results"])
    assert big - small < 0.25 * small, (small, big)  # 8 more hosts: +25 % at most (the old page: +100 %)
    per_host = (big - small) / 8
    faulty, faulty_doc = size("faulty8", **good, **{f"g{i:02d}": "containerd-not-default" for i in range(8, 16)})
    failures = sum(x["verdict"] != "pass" for x in faulty_doc["results"])
    assert faulty - big > 8 * per_host and failures >= 8, (big, faulty, failures)
    assert per_result < 1000, per_result


def test_mig_picture_shows_the_clusters_gpu_nodes():
    """The cluster's GPU nodes, as the bed publishes them (GPU Feature Discovery's labels and the
    MIG manager's), are drawn by their nvidia.com/mig.config; nodes sharing it share a picture."""
    from testbed.cluster.nodes import GpuWorker, published_node
    workers = [GpuWorker("gpu-worker-1", "all-1g.10gb"), GpuWorker("gpu-worker-2", "all-balanced"),
               GpuWorker("gpu-worker-3", "all-disabled"), GpuWorker("gpu-worker-4", "all-1g.10gb")]
    nodes = [fingerprint.gpu_node_summary(published_node(w)) for w in workers]
    assert nodes[0] == {"name": "gpu-worker-1", "gpu_product": "NVIDIA-H100-80GB-HBM3", "gpu_count": 8,
                        "mig_config": "all-1g.10gb", "mig_state": "success", "mig_devices": ["1g.10gb"] * 7}
    assert nodes[2]["mig_devices"] is None
    doc = {"fingerprint": {"hosts": [], "cluster": {"name": "k", "gpu_nodes": nodes}}}
    block = html.mig_block(doc)
    pictures = block.split('<div class="mig-node">')[1:]
    assert len(pictures) == 2  # all-1g.10gb (workers 1 and 4) and all-balanced
    one_g = next(p for p in pictures if "all-1g.10gb" in p[:200])
    assert "gpu-worker-1, gpu-worker-4" in one_g[:200] and one_g.count('data-profile="1g.10gb"') == 8 * 7
    balanced = next(p for p in pictures if "all-balanced" in p[:200])
    assert balanced.count('aria-label="GPU ') == 8
    assert 'data-profile="3g.40gb"' in balanced and "does not fit" not in block
    assert 'data-mig-config="all-disabled" data-nodes="1"' in block  # listed, not drawn
