"""MIG mode per GPU: as the profile says, and no change pending a reset."""
import pytest

from gpuconform.checks import check

pytestmark = pytest.mark.mig


@check("node.mig.mode", "MIG mode is as the profile says on every GPU",
       fix="let the GPU Operator's MIG manager apply the node's nvidia.com/mig.config label, or "
           "nvidia-smi -i <gpu> -mig <1|0> with the GPU idle, then reset the GPU",
       needs=["node.smi.runs"], evidence=["smi_gpus", "smi_list"])
def test_mig_mode_current(node, expected):
    """mig.mode.current is Enabled/Disabled on every GPU as `mig.mode` says."""
    if expected.mig.mode == "any":
        pytest.skip("the profile accepts any MIG mode on this host (mig.mode: any)")
    want = "Enabled" if expected.mig.mode == "enabled" else "Disabled"
    other = [f"GPU {g.index}: {g.mig_mode_current or 'not supported'}" for g in node.gpus
             if g.mig_mode_current != want]
    assert not other, f"MIG mode should be {want}; {'; '.join(other)}"


@check("node.mig.no_pending", "No MIG mode change is pending a GPU reset",
       fix="drain the node and reset the GPU (nvidia-smi -r -i <gpu>) or reboot so the pending MIG mode takes effect",
       needs=["node.smi.runs"], evidence=["smi_gpus"])
def test_mig_no_pending_change(node):
    """mig.mode.pending equals mig.mode.current on every GPU."""
    pending = [f"GPU {g.index}: {g.mig_mode_current} → {g.mig_mode_pending}" for g in node.gpus
               if g.mig_mode_pending != g.mig_mode_current]
    assert not pending, f"MIG mode change pending a reset: {'; '.join(pending)}"
