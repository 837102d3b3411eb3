"""Kernel command line, headers for the running kernel, tunables and the kernel log."""
from collections import Counter

import pytest

from gpuconform.checks import check
from gpuconform.node.topics import gpu_health, headers, kernel
from gpuconform.node import xid


@check("node.kernel.cmdline_required", **kernel.KERNEL_CMDLINE_REQUIRED)
def test_cmdline_has_required_param(node, expected, required_param):
    """Each `kernel.cmdline_required` parameter is on /proc/cmdline with that value."""
    if required_param not in expected.kernel.cmdline_required:
        pytest.skip(f"{required_param} is not required on this host by the profile")
    assert node.cmdline_has(required_param), f"{required_param} is not on the kernel command line"


@check("node.kernel.cmdline_forbidden", **kernel.KERNEL_CMDLINE_FORBIDDEN)
def test_cmdline_lacks_forbidden_param(node, expected, forbidden_param):
    """No `kernel.cmdline_forbidden` parameter (any value) is on /proc/cmdline."""
    if forbidden_param not in expected.kernel.cmdline_forbidden:
        pytest.skip(f"{forbidden_param} is not forbidden on this host by the profile")
    found = [f"{k}={v}" if v is not None else k for k, v in node.cmdline if k == forbidden_param]
    assert not found, f"forbidden kernel parameter present: {' '.join(found)}"


@check("node.kernel.headers", **headers.KERNEL_HEADERS)
def test_headers_for_running_kernel(node, expected):
    """/lib/modules/$(uname -r)/build exists, so DKMS can build the driver for this kernel."""
    if not expected.kernel.headers_required:
        pytest.skip("the profile does not require kernel headers (kernel.headers_required: false)")
    headers = node.headers
    assert headers.state == "present", (f"no kernel headers for the running kernel {node.kernel_release}: "
                                        f"/lib/modules/{node.kernel_release}/build is {headers.state}"
                                        + (f" (points to {headers.path})" if headers.state == "dangling" else ""))


@check("node.sysctl", **kernel.SYSCTL)
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


@check("node.kernel.no_xid", **gpu_health.KERNEL_NO_XID)
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
