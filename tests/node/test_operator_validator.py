"""The GPU Operator's validator has validated this host (its status files under /run/nvidia/validations)."""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import validator

READY = ("driver-ready", "toolkit-ready", "cuda-ready", "plugin-ready")


@check("node.operator.validations", **validator.OPERATOR_VALIDATIONS, needs=["node.driver.modules_loaded"])
def test_operator_validations(node, expected):
    """driver-ready, toolkit-ready, cuda-ready and plugin-ready exist, and driver-ready says the
    driver is the host's (IS_HOST_DRIVER=true: the profile's driver is installed on the host)."""
    if expected.services.operator_validator != "required":
        pytest.skip("the profile does not say the GPU Operator runs here (services.operator_validator: any)")
    v = node.operator_validations
    missing = [f for f in READY if f not in v.ready]
    assert not missing, f"/run/nvidia/validations lacks {', '.join(missing)} (has: {', '.join(sorted(v.ready)) or 'nothing'})"
    host_driver = v.driver.get("IS_HOST_DRIVER")
    assert host_driver == "true", (f"driver-ready says IS_HOST_DRIVER={host_driver or '(unset)'}: the validator "
                                   f"validated a driver container, not the host's driver the profile declares")
