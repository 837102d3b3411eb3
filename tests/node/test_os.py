"""The host runs the distribution family the profile declares (its fixes and packages differ)."""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import system
from gpuconform.parsers import kernel


@check("node.os.family", **system.OS_FAMILY)
def test_os_family(node, expected):
    """/etc/os-release (ID, ID_LIKE) names the profile's `os_family` (rhel, debian or suse)."""
    if expected.os_family == "any":
        pytest.skip("the profile accepts any OS family (os_family: any)")
    release = node.os_release
    assert node.os_family == expected.os_family, (
        f"the host runs {release.get('PRETTY_NAME') or release.get('ID') or 'an unnamed OS'} "
        f"(ID={release.get('ID', '')}, ID_LIKE={release.get('ID_LIKE', '')}): family "
        f"{node.os_family or 'unknown'}, expected {expected.os_family}")


@check("node.os.version", **system.OS_VERSION, needs=["node.os.family"])
def test_os_version(node, expected):
    """VERSION_ID of /etc/os-release is the profile's `os_version` or one of its point releases."""
    if expected.os_version is None:
        pytest.skip("the profile accepts any OS release (os_version: null)")
    release = node.os_release
    found = release.get("VERSION_ID")
    assert found is not None and kernel.os_version_matches(found, expected.os_version), (
        f"the host runs {release.get('PRETTY_NAME') or release.get('ID') or 'an unnamed OS'} "
        f"(VERSION_ID={found if found is not None else 'absent'}), expected release {expected.os_version} "
        f"(node.os_version)")
