"""The node topics, one module per concern of a host (what each declares: :mod:`gpuconform.node.topic`).

Everything the suite knows about a host is built from them here: the probe's steps
(:data:`STEPS`, one round trip), the facts (:data:`FACTS`, which
:class:`gpuconform.node.facts.NodeFacts` joins), the companion scripts (:data:`COMPANIONS`) and the
order in which a host's scripts run (:data:`ORDER`: the order of the topics below, so the kernel
headers and the linker come before the DKMS build that needs them).
"""
from __future__ import annotations

from gpuconform.node.topic import Companion, Step, tools_step
from gpuconform.node.topics import (container_runtime, dkms, driver, fabric_manager, gpu_health, headers, kernel,
                                    linker, mig, nouveau, persistence, signing, system, validator)

#: every topic, in the order their companion scripts run
TOPICS = (system, headers, linker, dkms, nouveau, kernel, signing, persistence, container_runtime, fabric_manager,
          mig, driver, gpu_health, validator)

#: tools whose presence is itself a fact ("missing tool" is a verdict, not a crash)
TOOLS: tuple[str, ...] = tuple(dict.fromkeys(tool for t in TOPICS for tool in t.TOOLS))
#: every step of the probe, in the order it runs
STEPS: tuple[Step, ...] = (tools_step(TOOLS), *(step for t in TOPICS for step in t.STEPS))
#: the facts class of every topic
FACTS: tuple[type, ...] = tuple(t.Facts for t in TOPICS)
#: check id → its companion script
COMPANIONS: dict[str, Companion] = {cid: c for t in TOPICS for cid, c in t.COMPANIONS.items()}
#: order in which a host's scripts run
ORDER: tuple[str, ...] = tuple(dict.fromkeys(c.script for c in COMPANIONS.values()))
