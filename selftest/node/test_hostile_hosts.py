"""Hosts whose files say hostile things: the verdicts stay the scenario's own.

Roots rendered for testinfra's chroot backend, one run of the node suite over all of them:
* the probe's own section markers (the old fixed ones and look-alikes) in a containerd config,
  /etc/os-release, the kernel log and the journal: a ``dkms-added`` host still fails
  node.dkms.nvidia_installed and nothing else (issue #28, finding 2);
* an invalid UTF-8 byte in /etc/os-release and a config file, and a ``python3`` on the host that
  hangs: the host answers, every check passes, that python3 never ran (findings 6 and 7);
* a 5 MB PRETTY_NAME: the run stays fast and the report small (finding 6).
"""
from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from expected import EXPECTED
from harness import assert_scenario, run_node_suite
from testbed.hosts import rootfs, scenarios

MARK = "@@gpuconform"


def forged_sections(kernel: str) -> list[str]:
    """Lines that, read as the probe's framing, would say DKMS installed the driver for ``kernel``
    and the probe ended: the fixed marker of old and look-alikes."""
    installed = f"nvidia/{scenarios.DRIVER}, {kernel}, x86_64: installed"
    return [
        f"{MARK} dkms_status begin", installed, f"{MARK} dkms_status rc=0",
        f"{MARK} containerd_files rc=0", f"{MARK} kernel_log rc=0",
        f"{MARK}  dkms_status  begin", installed, f"{MARK}\tdkms_status\trc=0",
        f"@@e {MARK} dkms_status rc=0", f"{MARK} dkms_status rc=0 timeout=1",
        f"{MARK} end",
    ]


def _render(name: str, base: Path, tag: str, change=None) -> Path:
    s = scenarios.build(name)
    if change:
        change(s)
    return rootfs.render(s, base / tag / name / "root", stage=base / ".bin")


def _with_markers(s) -> None:
    lines = forged_sections(s.kernel)
    s.os_release += 'GPUC_NOTE="' + "\n".join(lines) + '"\n'
    # the kernel log is read through `grep "NVRM: Xid"`: the forged lines carry those words
    s.dmesg += [f"{line} NVRM: Xid" for line in lines] + lines


HANGING_PYTHON = "#!/bin/sh\n: > /var/lib/gpusim/python3-ran\nexec sleep 3597\n"


def _not_utf8(root: Path) -> None:
    release = root / "etc/os-release"
    release.write_bytes(release.read_bytes().replace(b'PRETTY_NAME="', b'PRETTY_NAME="caf\xe9 \xff\xfe ', 1))
    (root / "etc/modprobe.d/zz-latin1.conf").write_bytes(b"# r\xe9glage nouveau \xff\n")
    python = root / "usr/bin/python3"
    python.unlink(missing_ok=True)
    python.write_text(HANGING_PYTHON)
    python.chmod(0o755)


BIG = 5 << 20


def _big_pretty_name(s) -> None:
    s.os_release = s.os_release.replace('PRETTY_NAME="', 'PRETTY_NAME="' + "A" * BIG, 1)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """{tag: (root, results of that root)}, the process, its wall time and the report folder."""
    if os.geteuid() != 0:
        pytest.skip("chroot needs root")
    base = tmp_path_factory.mktemp("hostile")
    roots = {"markers": _render("dkms-added", base, "markers", _with_markers),
             "markers-journal": _render("dkms-added", base, "markers-journal", _with_markers),
             "not-utf8": _render("gpu-good", base, "not-utf8"),
             "big": _render("gpu-good", base, "big", _big_pretty_name)}
    lines = forged_sections(scenarios.build("dkms-added").kernel)
    for tag in ("markers", "markers-journal"):
        toml = roots[tag] / "etc/containerd/config.toml"
        toml.write_text(toml.read_text() + "\ngpuconform_note = '''\n" + "\n".join(lines) + "\n'''\n")
    # dmesg restricted (kernel.dmesg_restrict): the probe reads the journal, where `logger` writes
    dmesg = roots["markers-journal"] / "usr/bin/dmesg"
    dmesg.unlink()  # a file of its own, whatever the render linked there
    dmesg.write_text("#!/bin/sh\necho 'dmesg: read kernel buffer failed: Operation not permitted' >&2\nexit 1\n")
    dmesg.chmod(0o755)
    _not_utf8(roots["not-utf8"])
    reports = base / "reports"
    t0 = time.monotonic()
    proc, results = run_node_suite("--hosts=" + ",".join(f"chroot://{r}" for r in roots.values()),
                                   report_dir=reports)
    wall = time.monotonic() - t0
    by_root = {tag: [r for r in results if r["host"] == str(root)] for tag, root in roots.items()}
    return roots, by_root, proc, wall, reports


@pytest.mark.parametrize("tag", ["markers", "markers-journal"])
def test_section_markers_in_host_files_change_no_verdict(hostile, tag):
    roots, results, proc, _, _ = hostile
    assert_scenario(f"dkms-added with forged probe markers in its files and kernel log ({tag})",
                    results[tag], EXPECTED["dkms-added"])
    source = next(r for r in results[tag] if r["check_id"] == "node.kernel.no_xid")
    assert ("source=journal" in str(source)) == (tag == "markers-journal"), str(source)[:2000]


def test_invalid_utf8_is_read_with_replacement_characters(hostile):
    roots, results, proc, _, _ = hostile
    assert_scenario("gpu-good with invalid UTF-8 in its files", results["not-utf8"], EXPECTED["gpu-good"])


def test_the_hosts_python3_is_never_asked(hostile):
    """testinfra would ask the host's python3 for its encoding, outside any deadline: never."""
    roots, _, _, _, _ = hostile
    assert not (roots["not-utf8"] / "var/lib/gpusim/python3-ran").exists(), "the host's python3 ran"
    left = subprocess.run(["pgrep", "-f", "sleep 3597"], capture_output=True, text=True).stdout.split()
    assert not left, f"processes left behind: {left}"


def test_a_huge_os_release_field_is_parsed_once_and_cut_in_the_report(hostile):
    roots, results, proc, wall, reports = hostile
    assert_scenario("gpu-good with a 5 MB PRETTY_NAME", results["big"], EXPECTED["gpu-good"])
    assert wall < 120, f"the run took {wall:.0f} s"
    sizes = {p.name: p.stat().st_size for p in reports.iterdir() if p.suffix in (".html", ".json")}
    assert sizes and all(size < BIG // 2 for size in sizes.values()), sizes
    evidence = next(r for r in results["big"] if r["check_id"] == "node.os.family")
    assert "bytes cut)" in str(evidence), "the evidence of os-release is not cut"
