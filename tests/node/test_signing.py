"""Module signature enforcement and lockdown: can the NVIDIA driver load, now and after the
next kernel update? (The article's `modprobe nvidia` → `Required key not available`.)"""
import pytest

from gpuconform.checks import check

CMDLINE_FIX = {"rhel": "grubby --update-kernel=ALL --args='module.sig_enforce=0' --remove-args='lockdown'; "
                       "grub2-mkconfig -o /boot/grub2/grub.cfg; reboot  (remediation/kernel-cmdline.sh --apply)",
               "debian": "add module.sig_enforce=0 to GRUB_CMDLINE_LINUX, remove lockdown=; update-grub; reboot",
               "default": "boot with module.sig_enforce=0 and without lockdown=, or sign the module with an "
                          "enrolled MOK key"}


def _enforcing(node) -> bool:
    return node.sig_enforce or node.lockdown != "none"


@check("node.signing.enforcement", "Module signature enforcement is as the profile requires",
       fix=CMDLINE_FIX, evidence=["sig_enforce", "cmdline"])
def test_signature_enforcement(node, expected):
    """With `signing.enforcement: off`, /sys/module/module/parameters/sig_enforce reads N."""
    if expected.signing.enforcement == "any":
        pytest.skip("the profile allows module signature enforcement (signing.enforcement: any)")
    assert not node.sig_enforce, "module signature enforcement is on (sig_enforce=Y); the profile requires it off"


@check("node.signing.lockdown", "Kernel lockdown mode is one the profile allows",
       fix=CMDLINE_FIX, evidence=["lockdown", "cmdline"])
def test_lockdown_mode(node, expected):
    """/sys/kernel/security/lockdown selects a mode listed in `signing.lockdown_allowed`."""
    assert node.lockdown in expected.signing.lockdown_allowed, (
        f"kernel lockdown is '{node.lockdown}', allowed: {', '.join(expected.signing.lockdown_allowed)}; "
        "lockdown refuses unsigned modules")


@check("node.signing.driver_loads", "The NVIDIA driver loads under the signature policy",
       fix=CMDLINE_FIX, evidence=["sig_enforce", "lockdown", "proc_modules", "modinfo_nvidia"])
def test_driver_loads_under_signature_policy(node):
    """When signatures are enforced (sig_enforce=Y or lockdown), nvidia is loaded, i.e. it was signed."""
    if not _enforcing(node):
        return
    assert "nvidia" in node.modules, (
        f"signature enforcement is on (sig_enforce={'Y' if node.sig_enforce else 'N'}, lockdown={node.lockdown}) "
        "and nvidia is not loaded: modprobe fails with 'Key was rejected by service' / "
        "'Required key not available' unless the module is signed by an enrolled key")


@check("node.signing.dkms_rebuild_signed", "A DKMS rebuild for the next kernel will load too",
       fix="Either boot with module.sig_enforce=0 (the article's choice), or give DKMS a signing key: "
           "set mok_signing_key/mok_certificate in /etc/dkms/framework.conf and enroll the certificate "
           "with `mokutil --import` (then reboot to confirm enrollment).",
       needs=["node.signing.driver_loads"], evidence=["sig_enforce", "lockdown", "dkms_sign", "mok_enrolled"])
def test_dkms_rebuild_will_be_signed(node, expected):
    """With enforcement on and a DKMS-built driver, DKMS signs what it builds (signing key configured)."""
    if expected.driver.install != "dkms":
        pytest.skip(f"the driver is not built by DKMS on this host (driver.install: {expected.driver.install})")
    if not _enforcing(node):
        return
    assert node.dkms_signing.has_key, ("signature enforcement is on and DKMS has no signing key: the driver loads now, but the "
                     "module DKMS builds after the next kernel update will be unsigned and rejected")
