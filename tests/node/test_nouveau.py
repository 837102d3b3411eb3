"""The nouveau driver must stay out of the way of the NVIDIA driver."""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import nouveau


@check("node.nouveau.not_loaded", **nouveau.NOUVEAU_NOT_LOADED)
def test_nouveau_not_loaded(node):
    """nouveau does not appear in /proc/modules."""
    assert "nouveau" not in node.modules, "nouveau is loaded (/proc/modules); the NVIDIA driver cannot bind the GPUs"


@check("node.nouveau.blacklisted", **nouveau.NOUVEAU_BLACKLISTED)
def test_nouveau_blacklisted(node, expected):
    """modprobe.d holds `blacklist nouveau` and `options nouveau modeset=0`."""
    if not expected.driver.blacklist_nouveau:
        pytest.skip("the profile does not require a nouveau blacklist (driver.blacklist_nouveau: false)")
    words = [w for _, w in node.modprobe_nouveau]
    missing = [rule for rule, present in (
        ("blacklist nouveau", ["blacklist", "nouveau"] in words),
        ("options nouveau modeset=0", any(w[:2] == ["options", "nouveau"] and "modeset=0" in w for w in words)),
    ) if not present]
    assert not missing, f"missing in /etc/modprobe.d: {'; '.join(missing)}"


@check("node.nouveau.not_in_initramfs", **nouveau.NOUVEAU_NOT_IN_INITRAMFS)
def test_nouveau_not_in_initramfs(node, expected):
    """The initramfs listing (lsinitrd/lsinitramfs) of the running kernel has no nouveau module."""
    if not expected.driver.blacklist_nouveau:
        pytest.skip("the profile does not require nouveau kept out (driver.blacklist_nouveau: false)")
    listing = node.initramfs_nouveau
    assert not listing.nouveau_modules, (
        f"nouveau is in the initramfs ({listing.tool}): {listing.nouveau_modules[0].split()[-1]}")
