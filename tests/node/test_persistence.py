"""Persistence: the nvidia-persistenced service enabled and active, the daemon running, and
persistence mode on every GPU — three facts, reported apart."""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import persistence


def _required(expected):
    if expected.services.persistenced != "required":
        pytest.skip("the profile does not require nvidia-persistenced (services.persistenced: any)")


@check("node.persistenced.enabled", **persistence.PERSISTENCED_ENABLED)
def test_persistenced_enabled(node, expected):
    """systemd has the daemon's unit (services.persistenced_unit) enabled: it starts at boot."""
    _required(expected)
    unit = node.unit(expected.services.persistenced_unit)
    assert unit.enabled, f"{unit.id} is {unit.unit_file_state or unit.load_state} (not enabled)"


@check("node.persistenced.active", **persistence.PERSISTENCED_ACTIVE, needs=["node.driver.modules_loaded"])
def test_persistenced_active(node, expected):
    """systemd reports the daemon's unit (services.persistenced_unit) active (running)."""
    _required(expected)
    unit = node.unit(expected.services.persistenced_unit)
    assert unit.active_state == "active", f"{unit.id} is {unit.describe()}"


@check("node.persistenced.running", **persistence.PERSISTENCED_RUNNING, needs=["node.driver.modules_loaded"])
def test_persistenced_running(node, expected):
    """A process named nvidia-persistenced runs on the host."""
    _required(expected)
    assert node.process_running("nvidia-persistenced"), "no nvidia-persistenced process is running" + (
        " (persistence mode is on through the driver's legacy setting, which NVIDIA deprecates in favour "
        "of the daemon)" if node.persistence_without_daemon else "")


@check("node.gpu.persistence_mode", **persistence.GPU_PERSISTENCE_MODE, needs=["node.smi.runs"])
def test_persistence_mode_enabled(node, expected):
    """nvidia-smi persistence_mode reads Enabled for every GPU."""
    _required(expected)
    off = [str(g.index) for g in node.gpus if g.persistence_mode != "Enabled"]
    assert not off, f"persistence mode is not Enabled on GPU {', '.join(off)}"
