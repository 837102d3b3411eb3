"""What a host prints is data: it cannot end or open a probe section, undecodable bytes do not
make the host unreachable, nothing runs on the host outside the probe, a huge field is read once
and cut, no data is never a pass, and host values are quoted in the fix texts (issue #28)."""
from __future__ import annotations

import os
import shlex
import subprocess
import time
from pathlib import Path

import pytest
import testinfra

from gpuconform.node import probe, remediation
from gpuconform.node.collect import probe_host
from gpuconform.node.facts import CannotTell, NodeFacts
from gpuconform.parsers import kernel

REPO = Path(__file__).resolve().parents[2]
MARK = "@@gpuconform"
FORGED = [f"{MARK} dkms_status begin", "nvidia/580.95.05, 6.1.0, x86_64: installed", f"{MARK} dkms_status rc=0",
          f"{MARK}  dkms_status begin", f"{MARK}\tdkms_status rc=0", f"@@e {MARK} x rc=0",
          f"{MARK} dkms_status rc=0 timeout=1", f"{MARK} end", f"{MARK} smi_gpus begin"]


def _tool(folder: Path, name: str, body: str) -> None:
    (folder / name).write_text("#!/bin/sh\n" + body)
    (folder / name).chmod(0o755)


def _probe_with(tools: Path, **inputs) -> str:
    env = {**os.environ, "PATH": f"{tools}:{os.environ['PATH']}"}
    return subprocess.run(probe.build_script(probe.ProbeInputs(**inputs), 5), shell=True, capture_output=True,
                          timeout=60, env=env).stdout.decode("utf-8", "replace")


def test_a_tools_output_cannot_end_or_open_a_section(tmp_path):
    """`dkms status` printing the probe's own markers (on stdout and stderr, without a last
    newline) and failing: its section holds exactly what it printed, with its real exit code, and
    every later section is still there."""
    forged = "\n".join(FORGED)
    _tool(tmp_path, "dkms", f"printf '%s' {shlex.quote(forged)}\nprintf '%s' {shlex.quote(forged)} >&2\nexit 3\n")
    out = _probe_with(tmp_path)
    sections = probe.parse(out)
    dkms = sections["dkms_status"]
    assert (dkms.rc, dkms.out, dkms.err) == (3, forged, forged)
    assert sorted(sections) == sorted(step.name for step in probe.STEPS)
    assert probe.finished(out)


def test_text_written_after_the_exit_code_cannot_stand_for_it(tmp_path):
    """A tool's child that writes the exit-code line to stderr after the tool ended: the section's
    exit code is not the one it wrote."""
    _tool(tmp_path, "dkms", f"(sleep 0.3; printf '{MARK} rc=0\\n{MARK} dkms_status rc=0\\n' >&2) &\nexit 3\n")
    dkms = probe.parse(_probe_with(tmp_path))["dkms_status"]
    assert dkms.rc != 0, dkms


def test_a_file_without_its_last_newline_keeps_the_next_section(tmp_path):
    _tool(tmp_path, "dkms", "printf 'no newline at the end'\n")
    sections = probe.parse(_probe_with(tmp_path))
    assert sections["dkms_status"].out == "no newline at the end" and sections["dkms_status"].rc == 0
    assert sections["ld"].rc is not None


def test_a_marker_behind_the_prefix_is_text():
    text = f"{MARK} a begin\n| {MARK} a rc=0\n| {MARK} b begin\n@@e {MARK} end\n{MARK} a rc=2\n"
    assert probe.parse(text) == {"a": probe.Section(2, f"{MARK} a rc=0\n{MARK} b begin", f"{MARK} end")}


def test_invalid_utf8_from_the_host_is_replaced_not_a_failure(tmp_path):
    (tmp_path / "f").write_bytes(b"PRETTY_NAME=\"caf\xe9 \xff\"\nID=rhel\n")
    _tool(tmp_path, "dkms", f"cat {tmp_path}/f\n")
    host = testinfra.get_host("local://")
    env_path = f"{tmp_path}:{os.environ['PATH']}"
    facts = probe_host(host, "latin1", f"PATH={shlex.quote(env_path)}; export PATH; "
                                       + probe.build_script(probe.ProbeInputs(), 5))
    assert facts.error is None, facts.error
    assert facts.section("dkms_status").out == 'PRETTY_NAME="caf\ufffd \ufffd"\nID=rhel'


def test_no_python_is_asked_for_the_encoding(tmp_path, monkeypatch):
    """testinfra asks `python3 -c 'import locale…'` for the encoding of non-ASCII output, outside
    the probe's deadline: a python3 that hangs must never be started."""
    ran = tmp_path / "python-ran"
    for name in ("python3", "python"):
        _tool(tmp_path, name, f": > {ran}\nexec sleep 3598\n")
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    host = testinfra.get_host("local://")
    t0 = time.monotonic()
    facts = probe_host(host, "local", f"sh -c {shlex.quote(probe.build_script(probe.ProbeInputs(), 5))}; "
                                      "printf '\\303\\251\\n'")
    assert time.monotonic() - t0 < 30 and facts.error is None, facts.error
    assert not ran.exists(), "python3 was started to guess the encoding"


def test_os_release_with_a_huge_field_is_read_in_linear_time():
    text = 'NAME="Red Hat"\nPRETTY_NAME="' + "A" * (5 << 20) + '"\nID="rhel"\nID_LIKE=\'fedora\'\nX="a \\"q\\" \\$b"\n'
    t0 = time.monotonic()
    release = kernel.parse_os_release(text)
    assert time.monotonic() - t0 < 2
    assert (release["ID"], release["ID_LIKE"], release["X"], release["NAME"]) == ("rhel", "fedora", 'a "q" $b', "Red Hat")


def _facts(**sections: probe.Section) -> NodeFacts:
    base = {"osrelease": probe.Section(0, "6.1.0-1", ""), "os_release": probe.Section(0, "ID=rhel", ""),
            "tools": probe.Section(0, "nvidia-smi=/usr/bin/nvidia-smi", ""),
            "smi_gpus": probe.Section(0, "0, NVIDIA H100 80GB HBM3, GPU-1, 00000000:18:00.0, 0x233010DE, "
                                         "580.95.05, Enabled, Disabled, Disabled, Enabled", "")}
    return NodeFacts("h", {**base, **sections})


def test_evidence_of_a_huge_section_is_cut_with_the_bytes_it_lost():
    facts = _facts(os_release=probe.Section(0, 'PRETTY_NAME="' + "A" * (5 << 20) + '"\nID=rhel', ""))
    shown = facts.evidence("os_release")
    assert len(shown.encode()) < 64 << 10 and "bytes cut)" in shown
    assert len(facts.os_release["PRETTY_NAME"]) < 1024 and "bytes cut)" in facts.os_release["PRETTY_NAME"]


@pytest.mark.parametrize("printed", ["", "\n", "0, [N/A], [N/A], [N/A]"])
def test_a_health_query_without_the_fields_it_judges_cannot_tell(printed):
    """nvidia-smi's health query exiting 0 and printing nothing (or no value for retired pages and
    row remapping) is "could not check", never "no fault"."""
    facts = _facts(smi_health=probe.Section(0, printed, ""))
    with pytest.raises(CannotTell, match="health query"):
        facts.gpu_health


def test_a_health_query_missing_a_gpu_cannot_tell():
    facts = _facts(smi_health=probe.Section(0, "", ""),
                   smi_gpus=probe.Section(0, "0, H, GPU-1, 0:1, 0x1, 580, Enabled, Disabled, Disabled, Enabled\n"
                                             "1, H, GPU-2, 0:2, 0x1, 580, Enabled, Disabled, Disabled, Enabled", ""))
    facts.sections["smi_health"] = probe.Section(0, "0, [N/A], No, No", "")
    with pytest.raises(CannotTell, match="GPU 1"):
        facts.gpu_health


def test_an_identity_query_without_rows_cannot_tell():
    facts = _facts(smi_gpus=probe.Section(0, "", ""))
    with pytest.raises(CannotTell, match="no GPU"):
        facts.gpus


HOSTILE_KERNEL = "6.1.0$(touch /tmp/pwned);id `id` 'x'"
ADD, REMOVE = "a=$(id) b=`x`;c", "lockdown"


class _Expected:
    class driver:
        install, version, dkms_module_names = "dkms", "580.95.05", ("nvidia",)

    class kernel:
        cmdline_required, cmdline_forbidden = tuple(ADD.split()), tuple(REMOVE.split())


K = HOSTILE_KERNEL
#: (check, family) → the host's and profile's words its companion script line must hold, each
#: quoted as one shell word
FIX_WORDS = {
    ("node.dkms.nvidia_installed", "rhel"): [K],
    ("node.kernel.headers", "rhel"): [K],
    ("node.kernel.headers", "debian"): [K],
    ("node.kernel.cmdline_required", "rhel"): [ADD, REMOVE],
    ("node.kernel.cmdline_required", "debian"): [ADD, REMOVE],
}


@pytest.mark.parametrize("check_id,family", list(FIX_WORDS))
def test_fix_texts_quote_host_values(check_id, family):
    """The host's kernel release and the profile's parameters are quoted in the companion script's
    line shown beside the fix: pasted into a shell, they stay one word and run nothing."""
    facts = _facts(osrelease=probe.Section(0, HOSTILE_KERNEL, ""),
                   os_release=probe.Section(0, f"ID={family}", ""),
                   tools=probe.Section(0, "", ""))
    fix = remediation.companion(check_id, facts, _Expected, None)
    assert fix is not None
    missing = [w for w in FIX_WORDS[check_id, family] if shlex.quote(w) not in fix.text()]
    assert not missing, f"not quoted: {missing} in {fix.text()}"


@pytest.fixture
def debian_root(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("rendering a host root and chroot need root")
    from testbed.hosts import rootfs, scenarios
    return rootfs.render(scenarios.build("cmdline-has-lockdown", on="good-debian"), tmp_path / "root",
                         stage=tmp_path / ".bin")


def _cmdline_script(root: Path, add: str, remove: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(REPO / "remediation/kernel-cmdline.sh"), "--apply"], capture_output=True, text=True,
                          timeout=60, env={**os.environ, "GPUCONFORM_ROOT": str(root), "ADD": add, "REMOVE": remove})


def test_kernel_cmdline_script_puts_parameters_into_sed_literally(debian_root):
    """kernel-cmdline.sh on a Debian root: parameters holding sed's special characters are added
    and removed as written, and no other parameter goes with them."""
    grub = debian_root / "etc/default/grub"
    text = grub.read_text()
    before = shlex.split(text.split('GRUB_CMDLINE_LINUX="', 1)[1].split("\n", 1)[0].rstrip('"'))
    grub.write_text(text.replace('GRUB_CMDLINE_LINUX="', 'GRUB_CMDLINE_LINUX="a.b=1 axb=2 x|y=3 xz=4 ', 1))
    proc = _cmdline_script(debian_root, "p=a|b&c/e q.*=1", "a.b x|y")
    line = next(x for x in grub.read_text().splitlines() if x.startswith("GRUB_CMDLINE_LINUX="))
    params = shlex.split(line.partition("=")[2])[0].split()
    assert sorted(params) == sorted(["p=a|b&c/e", "q.*=1", "axb=2", "xz=4", *before]), (line, proc.stdout, proc.stderr)


@pytest.mark.parametrize("param", ['x="y', "x=$(id)", "x=`id`", "x=a\\b"])
def test_kernel_cmdline_script_refuses_what_grubs_file_cannot_hold(debian_root, param):
    grub = debian_root / "etc/default/grub"
    text = grub.read_text()
    proc = _cmdline_script(debian_root, param, "")
    assert proc.returncode == 1 and "fix failed" in proc.stdout and grub.read_text() == text, (proc.stdout, proc.stderr)
