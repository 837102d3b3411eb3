"""What an Xid means for the node: its class and the action it needs, from the field's own
catalogues. Each entry names its source; an Xid none of them lists is sent to NVIDIA's Xid
catalogue (docs.nvidia.com/deploy/xid-errors) rather than guessed.

- NVIDIA/k8s-device-plugin v0.18.0 ``internal/rm/health.go``: Xids 13, 31, 43, 45, 68, 109 are
  application errors; the plugin marks a GPU unhealthy on any other.
- AWS's GPU health checks (issue #23's anchors): 79, 151, 168 need a reboot; 48, 64, 95, 119, 120 a
  GPU reset; 74 is NVLink.
- Azure NHC's H100 configuration flags 48 56 57 58 62 63 64 65 68 69 73 74 79 80 81 92 119 120.
"""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class XidClass:
    name: str
    action: str


APPLICATION = XidClass("application", "the job's own fault (the device plugin keeps the GPU healthy): "
                                      "look at the workload named in the Xid line; no node action")
RESET = XidClass("hardware, GPU reset", "drain the node, reset the GPU (nvidia-smi -r) or reboot; "
                                        "if it returns, collect nvidia-bug-report.sh and RMA")
REBOOT = XidClass("hardware, reboot", "drain and reboot the node; if it returns, check the GPU's seating "
                                      "and power, collect nvidia-bug-report.sh and RMA")
NVLINK = XidClass("NVLink", "drain the node, check `nvidia-smi nvlink -s` / `-e` and the fabric manager, "
                            "reset the GPUs; if it returns, RMA")
HARDWARE = XidClass("hardware or driver", "drain the node, collect nvidia-bug-report.sh, reset the GPU")

CATALOGUE: dict[int, XidClass] = {
    **{x: APPLICATION for x in (13, 31, 43, 45, 109)},          # k8s-device-plugin health.go
    **{x: RESET for x in (48, 64, 95, 119, 120)},               # AWS
    **{x: REBOOT for x in (79, 151, 168)},                      # AWS
    74: NVLINK,                                                 # AWS, NHC
    **{x: HARDWARE for x in (56, 57, 58, 62, 63, 65, 69, 73, 80, 81, 92)},   # NHC's list
    68: XidClass("application (video)", APPLICATION.action),   # device plugin; NHC flags it too
}
UNKNOWN = XidClass("not in the suite's catalogue", "look it up in NVIDIA's Xid catalogue "
                                                   "(docs.nvidia.com/deploy/xid-errors)")


def classify(code: int) -> XidClass:
    return CATALOGUE.get(code, UNKNOWN)
