"""Persistence: the nvidia-persistenced service and daemon, and persistence mode on every GPU."""
from __future__ import annotations

from functools import cached_property

from gpuconform.errors import CannotTell
from gpuconform.node.topic import Base, CheckText, Companion

STEPS = ()  # reads the system topic's units and processes, and the driver topic's GPUs
TOOLS: tuple[str, ...] = ()


class Facts(Base):
    @cached_property
    def persistence_without_daemon(self) -> bool:
        """Persistence mode Enabled on every GPU although no nvidia-persistenced runs."""
        try:
            gpus = self.gpus
        except CannotTell:
            return False
        return bool(gpus) and all(g.persistence_mode == "Enabled" for g in gpus) \
            and not self.process_running("nvidia-persistenced")


def _daemon(facts, expected, param):
    if not facts.systemd_is_init:
        return None  # no systemd: the daemon's unit cannot run; only persistence mode can be set
    if facts.process_running("nvidia-persistenced"):
        return None  # the daemon runs (with --no-persistence-mode): its unit must change, by hand
    return ()


def _mode(facts, expected, param):
    # without systemd the script sets nvidia-smi -pm 1 (lost at reboot)
    return _daemon(facts, expected, param) if facts.systemd_is_init else ()


_DAEMON = Companion("persistenced.sh", _daemon)
COMPANIONS = {
    "node.persistenced.enabled": _DAEMON,
    "node.persistenced.active": _DAEMON,
    "node.persistenced.running": _DAEMON,
    "node.gpu.persistence_mode": Companion("persistenced.sh", _mode),
}


# -- the checks' words (their checks: tests/node/test_persistence.py)
FIX = "systemctl enable --now nvidia-persistenced.service"

PERSISTENCED_ENABLED: CheckText = {
    "title": "nvidia-persistenced service is enabled",
    "fix": FIX,
    "evidence": ["pid1", "systemd_units"],
}

PERSISTENCED_ACTIVE: CheckText = {
    "title": "nvidia-persistenced service is active",
    "fix": FIX,
    "evidence": ["pid1", "systemd_units"],
}

PERSISTENCED_RUNNING: CheckText = {
    "title": "nvidia-persistenced daemon is running",
    "fix": FIX,
    "evidence": ["processes"],
}

GPU_PERSISTENCE_MODE: CheckText = {
    "title": "Persistence mode is Enabled on every GPU",
    "fix": "start nvidia-persistenced (preferred), or nvidia-smi -pm 1",
    "evidence": ["smi_gpus"],
}
