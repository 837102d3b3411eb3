"""The simulated GPU hosts themselves: reachable over SSH, and answering like real hosts.

These tests talk to the nodes with plain ``ssh -F <ssh_config>``, without the suite, so that a
broken test bed is told from a broken check.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from expected import EXPECTED
from gpuconform.node import probe
from testbed.hosts import net, scenarios

SMI_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
              "Make sure that the latest NVIDIA driver is installed and running.")


def ssh(nodes, host: str, command: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["ssh", "-F", str(nodes.ssh_config), host, command],
                          capture_output=True, text=True, timeout=timeout)


def test_every_scenario_has_an_expectation():
    assert set(scenarios.names()) == set(EXPECTED), (
        f"scenarios without expectation: {sorted(set(scenarios.names()) - set(EXPECTED))}; "
        f"expectations without scenario: {sorted(set(EXPECTED) - set(scenarios.names()))}")


def test_ssh_config_names_every_scenario(ssh_nodes):
    text = ssh_nodes.ssh_config.read_text()
    hosts = re.findall(r"^Host (\S+)$", text, re.MULTILINE)
    assert hosts == scenarios.names()
    assert ssh_nodes.hosts_arg.split(",") == [f"ssh://root@{n}" for n in scenarios.names()]


def test_two_checkouts_run_their_hosts_side_by_side(ssh_nodes, tmp_path):
    """Names, namespaces and subnet are the checkout's own: another checkout's simulated hosts come
    up next to this one's, and its `down` removes its own only (issue #25)."""
    other = tmp_path / "other-checkout"
    shutil.copytree(net.REPO / "testbed" / "hosts", other / "testbed" / "hosts",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (other / "testbed" / "__init__.py").write_text("")
    hosts = [sys.executable, "-m", "testbed.hosts"]
    env = {**os.environ, "PYTHONPATH": str(other)}

    def other_hosts(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*hosts, *args], cwd=other, env=env, capture_output=True, text=True, timeout=300)

    def answers(config, host: str) -> bool:
        return subprocess.run(["ssh", "-F", str(config), host, "true"], capture_output=True, timeout=60).returncode == 0

    def namespaces() -> set[str]:
        return {line.split()[0] for line in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                                             text=True).stdout.splitlines()}
    ours = {n.namespace for n in ssh_nodes.nodes}
    assert all(ns.startswith(f"gpuc-{net.CHECKOUT}-") for ns in ours)
    config = pathlib.Path(other_hosts("ssh-config").stdout.strip())
    try:
        up = other_hosts("up", "gpu-good")
        assert up.returncode == 0, up.stdout + up.stderr
        theirs = namespaces() - ours
        assert len(theirs) == 1 and not next(iter(theirs)).startswith(f"gpuc-{net.CHECKOUT}-"), theirs
        assert answers(config, "gpu-good") and answers(ssh_nodes.ssh_config, "gpu-good")
    finally:
        down = other_hosts("down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert namespaces() & ours == ours and not namespaces() & theirs
    assert answers(ssh_nodes.ssh_config, "gpu-good")


# What the probe must read from the good H100 worker, section by section: (rc, patterns).
GOOD_PROBE = {
    "osrelease": (0, [r"^6\.12\.21\.red80\.x86_64$"]),
    "os_release": (0, [r'^ID="redos"$', r'^ID_LIKE="rhel fedora"$']),
    "pid1": (0, [r"^systemd$"]),
    "tools": (0, [r"^nvidia-smi=/usr/bin/nvidia-smi$", r"^dkms=/usr/sbin/dkms$", r"^timeout=/usr/bin/timeout$",
                  r"^lsinitrd=", r"^rpm=", r"^ld=/usr/bin/ld$", r"^modinfo=/usr/sbin/modinfo$"]),
    "proc_modules": (0, [r"^nvidia \d+ \d+ nvidia_uvm,nvidia_modeset, Live 0x0+ \(OE\)$",
                         r"^nvidia_uvm \d+ \d+ - Live ", r"^nvidia_modeset "]),
    "cmdline": (0, [r"\bmodule\.sig_enforce=0\b", r"\brd\.driver\.blacklist=nouveau\b"]),
    "modprobe_d": (0, [r"^/etc/modprobe\.d/blacklist-nouveau\.conf:blacklist nouveau$",
                       r"^/etc/modprobe\.d/blacklist-nouveau\.conf:options nouveau modeset=0$",
                       r":alias lbm-nouveau off$"]),
    "initramfs": (0, [r"^tool=lsinitrd$"]),
    "sig_enforce": (0, [r"^N$"]),
    "lockdown": (0, [r"^\[none\] integrity confidentiality$"]),
    "secure_boot": (127, []),                       # mokutil absent
    "modinfo_nvidia": (0, [r"^version:\s+580\.95\.05$", r"^license:\s+Dual MIT/GPL$"]),
    "headers": (0, [r"^present /usr/src/kernels/6\.12\.21\.red80\.x86_64$"]),
    "dkms_version": (0, [r"^dkms-3\."]),
    "dkms_status": (0, [r"^nvidia/580\.95\.05, 6\.12\.21\.red80\.x86_64, x86_64: installed$"]),
    "ld": (0, [r"^path=/usr/bin/ld$", r"^real=/usr/bin/ld\.bfd$", r"^executable=yes$", r"^GNU ld version 2\.30-"]),
    "driver_version": (0, [r"^NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580\.95\.05  Release Build  "
                           r"\(dvs-builder@U16-I1-N07-12-3\)  Thu Sep 25 ", r"^GCC version:"]),
    "dev_nodes": (0, [r"^c.* 195, +255 .*/dev/nvidiactl$", r"^c.* /dev/nvidia-uvm$",
                      *[rf"^c.* 195, +{i} .*/dev/nvidia{i}$" for i in range(8)]]),
    "smi_gpus": (0, [rf"^{i}, NVIDIA H100 80GB HBM3, GPU-[0-9a-f-]{{36}}, 00000000:[0-9A-F]{{2}}:00\.0, "
                     r"0x233010DE, 580\.95\.05, Enabled, Disabled, Disabled, Enabled$" for i in range(8)]),
    "smi_health": (0, [rf"^{i}, \[N/A\], No, No$" for i in range(8)]),
    "smi_list": (0, [rf"^GPU {i}: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f-]{{36}}\)$" for i in range(8)]),
    "systemd_units": (0, [r"^Id=nvidia-persistenced\.service\nLoadState=loaded\nActiveState=active\n"
                          r"SubState=running\nUnitFileState=enabled\n\nId=nvidia-fabricmanager\.service",
                          r"^Id=containerd\.service$"]),
    "processes": (0, [r"^1 systemd$", r"^\d+ nvidia-persiste$", r"^\d+ nv-fabricmanage$", r"^\d+ containerd$"]),
    "fm_packages": (0, [r"^rpm nvidia-fabric-manager 580\.95\.05$"]),
    "fm_version": (0, [r"580\.95\.05"]),
    "nvidia_ctk": (0, [r"^NVIDIA Container Toolkit CLI version 1\.17\.8$", r"^commit: [0-9a-f]{40}$"]),
    "runtime_binary": (0, [r"^/usr/bin/nvidia-container-runtime: executable$"]),
    "containerd_dump": (0, [r"^version = 2$", r'^\s+default_runtime_name = "nvidia"$',
                            r'^\s+\[plugins\."io\.containerd\.grpc\.v1\.cri"\.containerd\.runtimes\.nvidia\]$',
                            r'^\s+runtime_type = "io\.containerd\.runc\.v2"$',
                            r'^\s+BinaryName = "/usr/bin/nvidia-container-runtime"$']),
    "containerd_files": (0, [r"^### file /etc/containerd/config\.toml$"]),
    "sysctl": (0, [r"^net\.core\.bpf_jit_harden=1$"]),
    "kernel_log": (0, [r"^source=dmesg$", r"^uptime=200000\.00$"]),
    "smi_pcie": (0, [rf"^{i}, 1, 5, 16, 16, Active$" for i in range(8)]),   # idle: Gen1 of Gen5
    "smi_clocks": (0, [rf"^{i}, Not Active, Not Active, Not Active, Not Active$" for i in range(8)]),
    "smi_memory_errors": (0, [rf"^{i}, 0, 0, 0$" for i in range(8)]),
    "nvlink_status": (0, [r"^GPU 0: NVIDIA H100 80GB HBM3 \(UUID: GPU-[0-9a-f-]{36}\)$", r"^\t Link 17: 26\.562 GB/s$"]),
    "nvlink_errors": (0, [r"^\t Link 17: Recovery Errors: 0$"]),
    "validations": (0, [r"^ready driver-ready$", r"^ready plugin-ready$", r"^driver IS_HOST_DRIVER=true$"]),
    "cdi_specs": (0, []),
}


def test_probe_over_ssh_reads_the_good_host(ssh_nodes):
    script = probe.build_script(probe.ProbeInputs(sysctls=("net.core.bpf_jit_harden",)))
    out = ssh(ssh_nodes, "gpu-good", script)
    assert out.returncode == 0, out.stderr
    sections = probe.parse(out.stdout)
    every = [step.name for step in probe.STEPS]
    assert sorted(sections) == sorted(every), f"sections missing: {set(every) - set(sections)}"
    wrong = []
    for name, (rc, patterns) in GOOD_PROBE.items():
        sec = sections[name]
        if sec.rc != rc:
            wrong.append(f"{name}: rc {sec.rc}, expected {rc} (stderr: {sec.err!r})")
        wrong += [f"{name}: no line matches /{p}/ in:\n{sec.out}" for p in patterns
                  if not re.search(p, sec.out, re.MULTILINE)]
    assert not re.search(r"NVRM: Xid", sections["kernel_log"].out)
    assert not re.search(r"nouveau\.ko", sections["initramfs"].out)
    assert not wrong, "\n".join(wrong)


# Tool answers that the suite's parsers rely on: (host, command, rc, stdout pattern, stderr pattern).
ANSWERS = [
    ("gpu-good", "nvidia-smi --query-gpu=index,memory.total --format=csv", 0,
     r"\Aindex, memory\.total \[MiB\]\n0, 81559 MiB\n", None),
    ("gpu-good", "nvidia-smi --query-gpu=index,memory.total --format=csv,noheader,nounits", 0, r"\A0, 81559\n", None),
    ("gpu-good", "nvidia-smi --query-gpu=index,no.such.field --format=csv", 2,
     r'Field "no\.such\.field" is not a valid field to query\.', None),
    ("gpu-good", "nvidia-smi", 0, r"\| NVIDIA-SMI 580\.95\.05 +Driver Version: 580\.95\.05 +CUDA Version: 13\.0 +\|", None),
    ("gpu-good", "timeout -k 2 30 echo ok", 0, r"\Aok\n", None),
    ("gpu-good", "uname -r", 0, r"\A6\.12\.21\.red80\.x86_64\n", None),
    ("gpu-good", "systemctl is-enabled nvidia-persistenced no-such", 1, r"\Aenabled\n",
     r"Failed to get unit file state for no-such\.service: No such file or directory"),
    ("gpu-good", "rpm -qa --qf '%{NAME} %{VERSION}\\n' 'nvidia-fabric*manager*'", 0,
     r"\Anvidia-fabric-manager 580\.95\.05\n\Z", None),
    ("gpu-good", "stat -c '%F %t %T' /dev/nvidia0", 0, r"character special file c3 0", None),
    ("good-mig", "nvidia-smi -L", 0, r"^GPU 0: .*\n(  MIG 1g\.10gb     Device  [0-6]: \(UUID: MIG-[0-9a-f-]{36}\)\n){7}GPU 1", None),
    ("good-mig", "nvidia-smi mig -lgip", 0, r"\|   0  MIG 1g\.10gb         19     0/7        9\.75 ", None),
    ("good-mig", "nvidia-smi --query-gpu=mig.mode.current,mig.mode.pending --format=csv,noheader", 0,
     r"\A(Enabled, Enabled\n){8}\Z", None),
    ("good-debian", "dkms status", 0, r"\Anvidia, 580\.95\.05, 5\.15\.0-139-generic, x86_64: installed\n", None),
    ("good-debian", "dpkg-query -W -f '${Package} ${Version}\\n' 'nvidia-fabricmanager*'", 0,
     r"\Anvidia-fabricmanager-580 580\.95\.05-1\n", None),
    ("upgraded-debian", "dpkg-query -W -f '${db:Status-Abbrev}|${Package}|${Version}|${Status}\\n' 'nvidia-fabricmanager*'",
     0, r"\Arc \|nvidia-fabricmanager-570\|570\.172\.08-1\|deinstall ok config-files\n"
        r"un \|nvidia-fabricmanager-575\|\|unknown ok not-installed\n"
        r"ii \|nvidia-fabricmanager-580\|580\.95\.05-1\|install ok installed\n\Z", None),
    ("good-debian", "containerd config dump", 0,
     r"(?s)\Aversion = 3\n.*imports = \['/etc/containerd/conf\.d/99-nvidia\.toml'\].*"
     r"default_runtime_name = 'nvidia'.*BinaryName = '/usr/bin/nvidia-container-runtime'", None),
    ("good-debian", "readlink /bin/sh; command -v lsinitrd rpm; true", 0, r"\Adash\n\Z", None),
    ("sig-enforce-blocks-driver", "nvidia-smi -L", 9, re.escape(SMI_FAILED), None),
    ("sig-enforce-blocks-driver", "ls /dev | grep -c nvidia", 1, r"\A0\n", None),
    ("dkms-broken", "dkms status", 0, r"\Anvidia/580\.95\.05: broken\n", r"Missing module source directory"),
    ("ld-not-executable", "ld --version", 126, r"\A\Z", r"/usr/bin/ld: Permission denied"),
    ("persistenced-inactive", "systemctl is-active nvidia-persistenced", 3, r"\Ainactive\n", None),
    ("no-systemd", "cat /proc/1/comm; command -v systemctl", 1, r"\Atini\n\Z", None),
    ("nouveau-in-initramfs", "lsinitrd /boot/initramfs-$(uname -r).img | grep nouveau.ko", 0,
     r"drivers/gpu/drm/nouveau/nouveau\.ko\.xz", None),
    ("xid-in-log", "dmesg | grep 'NVRM: Xid'", 0, r"NVRM: Xid \(PCI:0000:5d:00\): 79, ", None),
]


@pytest.mark.parametrize("host,command,rc,stdout,stderr", ANSWERS,
                         ids=[f"{a[0]}:{a[1][:40]}" for a in ANSWERS])
def test_tools_answer_like_the_real_ones(ssh_nodes, host, command, rc, stdout, stderr):
    out = ssh(ssh_nodes, host, command)
    assert out.returncode == rc, f"rc {out.returncode}, expected {rc}\nstdout: {out.stdout}\nstderr: {out.stderr}"
    assert re.search(stdout, out.stdout, re.MULTILINE), f"stdout does not match /{stdout}/:\n{out.stdout}"
    if stderr:
        assert re.search(stderr, out.stderr, re.MULTILINE), f"stderr does not match /{stderr}/:\n{out.stderr}"


@pytest.mark.parametrize("files", [("cpu.cfs_period_us", "cpu.cfs_quota_us"), ("cpu.max",)])
def test_the_hosts_cpu_cap_is_set_and_lifted(tmp_path, files):
    """``SshNodes(cpus=N)`` caps the hosts' group at N CPUs (cgroup v1 quota or v2 cpu.max); every
    start without it lifts a cap an earlier bed left."""
    for name in files:
        (tmp_path / name).write_text("")
    read = (lambda: (tmp_path / "cpu.cfs_quota_us").read_text()) if len(files) == 2 else \
        (lambda: (tmp_path / "cpu.max").read_text())
    net.cap_cpus(tmp_path, 1.5)
    assert read() == ("150000" if len(files) == 2 else "150000 100000")
    net.cap_cpus(tmp_path, None)
    assert read() == ("-1" if len(files) == 2 else "max 100000")
    with pytest.raises(ValueError, match="cpus: 0"):
        net.SshNodes(["gpu-good"], tmp_path, cpus=0)
