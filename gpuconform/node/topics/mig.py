"""MIG: every GPU in the profile's MIG mode, none with a change pending a reset."""
from __future__ import annotations

from gpuconform.node.topic import Base, CheckText, Companion

STEPS = ()  # reads the driver topic's GPUs (mig.mode.current / mig.mode.pending)
TOOLS: tuple[str, ...] = ()


class Facts(Base):
    pass


COMPANIONS = {
    # drain the node, stop the GPU's clients, nvidia-smi -r (or reboot), uncordon
    "node.mig.no_pending": Companion("mig-reset.sh"),
}


# -- the checks' words (their checks: tests/node/test_mig.py)

MIG_MODE: CheckText = {
    "title": "MIG mode is as the profile says on every GPU",
    "fix": "let the GPU Operator's MIG manager apply the node's nvidia.com/mig.config label, or "
           "nvidia-smi -i <gpu> -mig <1|0> with the GPU idle, then reset the GPU",
    "evidence": ["smi_gpus", "smi_list"],
}

MIG_NO_PENDING: CheckText = {
    "title": "No MIG mode change is pending a GPU reset",
    "fix": "drain the node and reset the GPU (nvidia-smi -r -i <gpu>) or reboot so the pending MIG mode takes effect",
    "evidence": ["smi_gpus"],
}
