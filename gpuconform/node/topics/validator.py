"""The GPU Operator's validator: its status files on the host."""
from __future__ import annotations

import dataclasses
from functools import cached_property

from gpuconform.errors import CannotTell
from gpuconform.node.topic import Base, CheckText, Step

STEPS = (
    # the GPU Operator validator's status files (gpu-operator validator/main.go: /run/nvidia/
    # validations, driver-ready holding IS_HOST_DRIVER=…): names, and driver-ready's two keys
    # prefixed, so that no file's content can pass for another file
    Step("validations", 'D=/run/nvidia/validations; for f in driver-ready toolkit-ready cuda-ready plugin-ready; do '
                        '[ -e "$D/$f" ] && echo "ready $f"; done; [ -r "$D/driver-ready" ] && '
                        'sed -n -E "s/^(IS_HOST_DRIVER|NVIDIA_DRIVER_ROOT)=(.*)$/driver \\1=\\2/p" "$D/driver-ready"; true',
         "ls /run/nvidia/validations; cat /run/nvidia/validations/driver-ready"),
)
TOOLS: tuple[str, ...] = ()
COMPANIONS: dict = {}


@dataclasses.dataclass(frozen=True)
class Validations:
    """The GPU Operator validator's status files present, and what driver-ready says."""
    ready: frozenset[str]
    driver: dict[str, str]


def parse_validations(text: str) -> Validations:
    """The validations step's ``ready <file>`` and ``driver <KEY>=<value>`` lines."""
    ready, driver = set(), {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "ready" and rest:
            ready.add(rest.strip())
        elif kind == "driver" and "=" in rest:
            key, _, value = rest.partition("=")
            driver[key] = value.strip()
    return Validations(frozenset(ready), driver)


class Facts(Base):
    @cached_property
    def operator_validations(self) -> Validations:
        return parse_validations(self.section("validations").out)

    @cached_property
    def driver_container_root(self) -> str | None:
        """Where the GPU Operator's driver container provides this host's driver, as its validator
        found it (driver-ready: IS_HOST_DRIVER=false, NVIDIA_DRIVER_ROOT; gpu-operator
        cmd/nvidia-validator/main.go runValidation); None where it found a host driver, wrote nothing
        or the probe did not say."""
        try:
            driver = self.operator_validations.driver
        except CannotTell:
            return None
        if driver.get("IS_HOST_DRIVER") != "false":
            return None
        return driver.get("NVIDIA_DRIVER_ROOT") or "(unset)"


# -- the checks' words (their checks: tests/node/test_operator_validator.py)

OPERATOR_VALIDATIONS: CheckText = {
    "title": "The GPU Operator validator has validated the host driver, toolkit, CUDA and device plugin",
    "fix": "kubectl -n gpu-operator logs <nvidia-operator-validator pod on this node> --all-containers: the "
           "first init container that does not finish names the missing piece",
    "evidence": ["validations"],
}
