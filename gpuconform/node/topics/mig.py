"""MIG: every GPU in the profile's MIG mode, none with a change pending a reset."""
from __future__ import annotations

from gpuconform.node.topic import Base, Companion

STEPS = ()  # reads the driver topic's GPUs (mig.mode.current / mig.mode.pending)
TOOLS: tuple[str, ...] = ()


class Facts(Base):
    pass


COMPANIONS = {
    # drain the node, stop the GPU's clients, nvidia-smi -r (or reboot), uncordon
    "node.mig.no_pending": Companion("mig-reset.sh"),
}
