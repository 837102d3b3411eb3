"""NVIDIA fabric manager (NVSwitch systems): same version as the driver, service active."""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import fabric_manager

def _required(expected):
    if expected.services.fabric_manager != "required":
        pytest.skip("the profile does not require fabric manager (services.fabric_manager: any; "
                    "only NVSwitch systems such as HGX H100 need it)")


@check("node.fabricmanager.version", **fabric_manager.FABRICMANAGER_VERSION)
def test_fabric_manager_version(node, expected):
    """The installed fabric manager package has exactly the driver's version (the loaded driver's
    when one is loaded, else the profile's)."""
    _required(expected)
    known = node.fabric_manager_packages
    installed = [p for p in known if p.installed]
    leftovers = "; ".join(p.describe() for p in known if not p.installed)
    assert installed, ("no fabric manager package is installed (nvidia-fabric-manager / "
                       "nvidia-fabricmanager-<branch>)" + (f"; known but not installed: {leftovers}" if leftovers else ""))
    versions = sorted({p.version.split("-")[0] for p in installed})
    loaded = node.driver_proc_version
    driver = loaded.version if loaded else expected.driver.version
    assert versions == [driver], (
        f"fabric manager {', '.join(versions)} installed, driver is {driver}"
        f"{' (loaded)' if loaded else ' (profile)'}: the versions must be equal")


@check("node.fabricmanager.active", **fabric_manager.FABRICMANAGER_ACTIVE, needs=["node.driver.modules_loaded"])
def test_fabric_manager_active(node, expected):
    """systemd reports the fabric manager's unit (services.fabric_manager_unit) active."""
    _required(expected)
    unit = node.unit(expected.services.fabric_manager_unit)
    assert unit.active_state == "active", f"{unit.id} is {unit.describe()}"
