"""Module signature enforcement and lockdown: can the NVIDIA driver load, now and after the
next kernel update? (The article's `modprobe nvidia` → `Required key not available`.)"""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import signing


def _enforcing(node) -> bool:
    return node.sig_enforce or node.lockdown != "none"


@check("node.signing.enforcement", **signing.SIGNING_ENFORCEMENT)
def test_signature_enforcement(node, expected):
    """With `signing.enforcement: off`, /sys/module/module/parameters/sig_enforce reads N."""
    if expected.signing.enforcement == "any":
        pytest.skip("the profile allows module signature enforcement (signing.enforcement: any)")
    assert not node.sig_enforce, "module signature enforcement is on (sig_enforce=Y); the profile requires it off"


@check("node.signing.lockdown", **signing.SIGNING_LOCKDOWN)
def test_lockdown_mode(node, expected):
    """/sys/kernel/security/lockdown selects a mode listed in `signing.lockdown_allowed`."""
    assert node.lockdown in expected.signing.lockdown_allowed, (
        f"kernel lockdown is '{node.lockdown}', allowed: {', '.join(expected.signing.lockdown_allowed)}; "
        "lockdown refuses unsigned modules")


@check("node.signing.driver_loads", **signing.SIGNING_DRIVER_LOADS)
def test_driver_loads_under_signature_policy(node):
    """When signatures are enforced (sig_enforce=Y or lockdown), nvidia is loaded, i.e. it was signed."""
    if not _enforcing(node):
        return
    assert "nvidia" in node.modules, (
        f"signature enforcement is on (sig_enforce={'Y' if node.sig_enforce else 'N'}, lockdown={node.lockdown}) "
        "and nvidia is not loaded: modprobe fails with 'Key was rejected by service' / "
        "'Required key not available' unless the module is signed by an enrolled key")


@check("node.signing.dkms_rebuild_signed", **signing.SIGNING_DKMS_REBUILD_SIGNED, needs=["node.signing.driver_loads"])
def test_dkms_rebuild_will_be_signed(node, expected):
    """With enforcement on and a DKMS-built driver, DKMS signs what it builds (signing key configured)."""
    if expected.driver.install != "dkms":
        pytest.skip(f"the driver is not built by DKMS on this host (driver.install: {expected.driver.install})")
    if not _enforcing(node):
        return
    assert node.dkms_signing.has_key, ("signature enforcement is on and DKMS has no signing key: the driver loads now, but the "
                     "module DKMS builds after the next kernel update will be unsigned and rejected")
