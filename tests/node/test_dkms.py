"""DKMS builds the NVIDIA driver for the running kernel (the article's `added` instead of
`installed`, and the linker that lost its run bit)."""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import dkms, linker


def _nvidia_entries(node, expected):
    names = set(expected.driver.dkms_module_names)
    return [e for e in node.dkms_entries if e.module in names]


@check("node.dkms.nvidia_installed", **dkms.DKMS_NVIDIA_INSTALLED)
def test_dkms_nvidia_installed_for_running_kernel(node, expected):
    """`dkms status` shows nvidia (or nvidia-open) at the profile's version `installed` for `uname -r`."""
    if expected.driver.install != "dkms":
        pytest.skip(f"the driver is not built by DKMS on this host (driver.install: {expected.driver.install})")
    kver, want = node.kernel_release, expected.driver.version
    entries = _nvidia_entries(node, expected) if node.tool("dkms") else None
    good = [e for e in entries or () if e.version == want and e.kernel == kver and e.state == "installed"]
    assert good, _why_not_installed(entries, kver, want, expected.driver.dkms_module_names)


def _why_not_installed(entries, kver, want, names) -> str:
    if entries is None:
        return "dkms is not installed on the host, but the profile says the driver is built by DKMS"
    if not entries:
        return f"dkms knows no nvidia module (looked for {', '.join(names)})"
    here = [e for e in entries if e.kernel in (kver, None)]
    described = "; ".join(f"{e.module}/{e.version}" + (f" for {e.kernel}" if e.kernel else "") + f": {e.state}"
                          + (f" ({e.note})" if e.note else "") for e in (here or entries))
    if not here:
        return f"nvidia is built by DKMS only for other kernels, not the running {kver}: {described}"
    return f"nvidia {want} is not installed for the running kernel {kver}: {described}"


@check("node.toolchain.ld_runs", **linker.TOOLCHAIN_LD_RUNS)
def test_linker_runs(node, expected):
    """`ld` is on PATH, executable, and `ld --version` succeeds (else make fails: /bin/ld: Permission denied)."""
    if expected.driver.install != "dkms":
        pytest.skip(f"nothing is built on this host (driver.install: {expected.driver.install})")
    ld = node.ld
    assert ld.path, "no `ld` on PATH: binutils is missing, DKMS cannot link the driver"
    assert ld.executable, f"{ld.path} is not executable (Permission denied); DKMS builds fail"
    assert ld.runs, f"`ld --version` failed: {ld.error or 'no version printed'}"
