"""Kernel command line, headers for the running kernel, tunables and the kernel log."""
from collections import Counter

import pytest

from gpuconform.checks import check
from gpuconform.node import xid

GRUB_ADD = {"rhel": "grubby --update-kernel=ALL --args='{p}' && reboot",
            "debian": "add '{p}' to GRUB_CMDLINE_LINUX in /etc/default/grub; update-grub && reboot",
            "default": "add '{p}' to the kernel command line of the boot loader and reboot"}
GRUB_REMOVE = {"rhel": "grubby --update-kernel=ALL --remove-args='{p}' && reboot",
               "debian": "remove '{p}' from GRUB_CMDLINE_LINUX in /etc/default/grub; update-grub && reboot",
               "default": "remove '{p}' from the kernel command line and reboot"}


@check("node.kernel.cmdline_required", "Kernel command line carries the required parameter",
       fix={k: v.format(p="<parameter>") + "   (remediation/kernel-cmdline.sh --apply)"
            for k, v in GRUB_ADD.items()},
       evidence=["cmdline"])
def test_cmdline_has_required_param(node, expected, required_param):
    """Each `kernel.cmdline_required` parameter is on /proc/cmdline with that value."""
    if required_param not in expected.kernel.cmdline_required:
        pytest.skip(f"{required_param} is not required on this host by the profile")
    assert node.cmdline_has(required_param), f"{required_param} is not on the kernel command line"


@check("node.kernel.cmdline_forbidden", "Kernel command line lacks the forbidden parameter",
       fix={k: v.format(p="<parameter>") for k, v in GRUB_REMOVE.items()}, evidence=["cmdline"])
def test_cmdline_lacks_forbidden_param(node, expected, forbidden_param):
    """No `kernel.cmdline_forbidden` parameter (any value) is on /proc/cmdline."""
    if forbidden_param not in expected.kernel.cmdline_forbidden:
        pytest.skip(f"{forbidden_param} is not forbidden on this host by the profile")
    found = [f"{k}={v}" if v is not None else k for k, v in node.cmdline if k == forbidden_param]
    assert not found, f"forbidden kernel parameter present: {' '.join(found)}"


@check("node.kernel.headers", "Kernel headers/devel for the RUNNING kernel are installed",
       fix={"rhel": "comment out `exclude=kernel*` in /etc/dnf/dnf.conf, then "
                    "dnf install kernel-devel-$(uname -r)  (kernel-lt-devel-$(uname -r) on RED OS)",
            "debian": "apt-get install linux-headers-$(uname -r)",
            "default": "install the headers package of the running kernel"},
       evidence=["osrelease", "headers"])
def test_headers_for_running_kernel(node, expected):
    """/lib/modules/$(uname -r)/build exists, so DKMS can build the driver for this kernel."""
    if not expected.kernel.headers_required:
        pytest.skip("the profile does not require kernel headers (kernel.headers_required: false)")
    headers = node.headers
    assert headers.state == "present", (f"no kernel headers for the running kernel {node.kernel_release}: "
                                        f"/lib/modules/{node.kernel_release}/build is {headers.state}"
                                        + (f" (points to {headers.path})" if headers.state == "dangling" else ""))


@check("node.sysctl", "Kernel tunable is within the profile's bounds",
       fix="sysctl -w <key>=<value> and persist it in /etc/sysctl.d/99-gpuconform.conf "
           "(remediation/sysctl.sh --apply; for net.core.bpf_jit_harden use 1)",
       evidence=["sysctl"])
def test_sysctl_within_bounds(node, expected, sysctl_key):
    """Each `sysctl` rule of the profile holds (eq/min/max); bpf_jit_harden=2 breaks the GPU Operator validator."""
    rule = expected.sysctl.get(sysctl_key)
    if rule is None:
        pytest.skip(f"no rule for {sysctl_key} on this host in the profile")
    raw = node.sysctl.get(sysctl_key)
    assert raw is not None, f"{sysctl_key} does not exist on this kernel (/proc/sys)"
    value = int(raw.split()[0])
    bounds = [(rule.eq, value == rule.eq, "="), (rule.max, value <= (rule.max or 0), "<="),
              (rule.min, value >= (rule.min or 0), ">=")]
    broken = [f"{op} {b}" for b, ok, op in bounds if b is not None and not ok]
    assert not broken, f"{sysctl_key} = {value}, expected {' and '.join(broken)}"


@check("node.kernel.no_xid", "No NVIDIA Xid error in the kernel log (since boot or the profile's window)",
       fix="each Xid's class and action are in the message (gpuconform/node/xid.py); anything else: NVIDIA's "
           "Xid catalogue. Hardware Xids: drain the node, collect nvidia-bug-report.sh, reset or replace the GPU.",
       evidence=["kernel_log"])
def test_no_xid_since_boot(node, expected):
    """The kernel log holds no `NVRM: Xid` line in the profile's window (except codes it tolerates);
    each Xid found is named with its class and the action it needs."""
    log = node.kernel_log
    window = expected.health.xid_window_h
    bad = [x for x in log.within(window) if x.code not in expected.health.xid_allowed]
    counts = Counter(x.code for x in bad)
    classes = "; ".join(f"Xid {code} ×{n}: {xid.classify(code).name} — {xid.classify(code).action}"
                        for code, n in sorted(counts.items()))
    span = f"in the last {window:g} h" if window is not None else "since boot"
    assert not bad, f"{len(bad)} Xid event(s) {span} ({log.source}): {classes}; first: {bad[0].line}"
