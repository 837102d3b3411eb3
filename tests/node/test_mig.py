"""MIG mode per GPU: as the profile says, and no change pending a reset."""
import pytest

from gpuconform.checks import check
from gpuconform.node.topics import mig

pytestmark = pytest.mark.mig


@check("node.mig.mode", **mig.MIG_MODE, needs=["node.smi.runs"])
def test_mig_mode_current(node, expected):
    """mig.mode.current is Enabled/Disabled on every GPU as `mig.mode` says."""
    if expected.mig.mode == "any":
        pytest.skip("the profile accepts any MIG mode on this host (mig.mode: any)")
    want = "Enabled" if expected.mig.mode == "enabled" else "Disabled"
    other = [f"GPU {g.index}: {g.mig_mode_current or 'not supported'}" for g in node.gpus
             if g.mig_mode_current != want]
    assert not other, f"MIG mode should be {want}; {'; '.join(other)}"


@check("node.mig.no_pending", **mig.MIG_NO_PENDING, needs=["node.smi.runs"])
def test_mig_no_pending_change(node):
    """mig.mode.pending equals mig.mode.current on every GPU."""
    pending = [f"GPU {g.index}: {g.mig_mode_current} → {g.mig_mode_pending}" for g in node.gpus
               if g.mig_mode_pending != g.mig_mode_current]
    assert not pending, f"MIG mode change pending a reset: {'; '.join(pending)}"
