"""One round trip per host: a POSIX-sh probe that reads every node fact at once.

The probe is read-only. Each fact is a *section*: a command (or file read) whose stdout, stderr
and exit code come back apart, so parsers never see stderr noise and "tool missing" is told from
"tool failed". Each command is bounded by ``timeout`` where the host has it, so a hung
``nvidia-smi`` costs one section, not the run (its section says it timed out).

The whole probe is bounded too, also on a host without ``timeout`` or with a tool that ignores
TERM and leaves a ``setsid`` child holding stdout: every process the probe starts carries the
run's token in its environment (``GPUC_RUN``), and a watchdog started first ends them all, found
by that token in /proc, and the probe itself at the deadline. The client ends its side at the
same deadline (:mod:`gpuconform.node.collect`).

Wire format (one line per record, stdout of the probe)::

    @@gpuconform <section> begin
    | <stdout line>           (every line a command printed carries a prefix: '| ' on stdout,
    @@e <stderr line>          '@@e ' on stderr, after the stdout lines; empty lines end a
                               last line that lacked its newline)
    @@gpuconform <section> rc=<code>[ timeout=<seconds>]   (timeout=: killed by its command timeout)
    ...
    @@gpuconform end          (the probe ran to its end)

Only the probe's own lines start with the marker: whatever a host file or tool says (a config
file, the kernel log, os-release holding ``@@gpuconform dkms_status rc=0``) comes back behind
its prefix, so it can neither end nor open a section. A line with neither a prefix nor the
marker (the probe shell's own stderr, where a pod's log mixes it in) is no part of any section.
"""
from __future__ import annotations

import dataclasses
import math
import shlex

from gpuconform.node import topics
from gpuconform.node.topic import Section, Step

MARK = "@@gpuconform"
OUT = "| "
ERR = "@@e "

#: The watchdog: at the deadline, KILL the probe's shell (so it starts nothing more), then every
#: process carrying this run's token (those a hung tool moved to a session of their own included).
#: It holds none of the probe's output, so a probe that ends in time is not kept waiting; the
#: probe's end stops it (TERM) and waits for it, so nothing is left, not even a zombie.
_WATCHDOG = r"""
( trap 'kill $s 2>/dev/null; wait $s 2>/dev/null; exit 0' TERM
  sleep "$GPUC_DEADLINE" & s=$!; wait $s
  kill -KILL $$
  for round in 1 2; do
    for p in /proc/[0-9]*; do
      tr '\000' '\n' < "$p/environ" 2>/dev/null | grep -qx "GPUC_RUN=$GPUC_RUN" && kill -KILL "${p#/proc/}"
    done
  done ) </dev/null >/dev/null 2>&1 &
GPUC_W=$!
"""

_PRELUDE = r"""
M='@@gpuconform'
if command -v timeout >/dev/null 2>&1; then T="timeout -k 2 $GPUC_T"; else T=""; fi
kver=$(cat /proc/sys/kernel/osrelease 2>/dev/null)
export T kver
sec() { name=$1; shift
  echo "$M $name begin"
  # stdout goes out line by line behind its prefix; stderr (with the exit code last) is held
  # until stdout is done, so the two never meet inside a line
  e=$( { { "$@"; echo "$M rc=$?" >&2; } | LC_ALL=C sed 's/^/| /' >&3; } 2>&1 )
  echo
  case $e in *"$M rc="*) rc=${e##*"$M rc="}; e=${e%"$M rc="*} ;; *) rc= ;; esac
  case $rc in ''|*[!0-9]*) rc= ;; esac  # a number, or nothing: never text a tool wrote after it
  [ -z "$e" ] || { printf '%s' "$e" | LC_ALL=C sed 's/^/@@e /'; echo; }
  case "$T:$rc" in  # timeout's own codes: 124 after TERM, 137 after the KILL that follows (-k)
    ?*:124|?*:137) echo "$M $name rc=$rc timeout=$GPUC_T" ;;
    *) echo "$M $name rc=${rc:-none}" ;;
  esac
} 3>&1
"""


@dataclasses.dataclass(frozen=True)
class ProbeInputs:
    """What the probe reads that the profile names (``LoadedProfile.probe_inputs``): passed to the
    host as shell variables, so the steps stay one fixed list."""
    sysctls: tuple[str, ...] = ()
    runtime_binaries: tuple[str, ...] = ("/usr/bin/nvidia-container-runtime",)
    units: tuple[str, ...] = ("nvidia-persistenced.service", "nvidia-fabricmanager.service", "containerd.service")
    dcgm_diag: str = ""      # the DCGM diagnostic level this host's profile asks for ("": none; it loads the GPU)


#: Every step of the probe, in the order it runs: the steps of the node topics.
STEPS: tuple[Step, ...] = topics.STEPS
#: Tools whose presence is itself a fact (the ``tools`` step).
TOOLS: tuple[str, ...] = topics.TOOLS
__all__ = ["Section", "Step", "STEPS", "TOOLS", "BY_NAME", "ProbeInputs", "build_script", "finished", "parse"]

#: Each step by its name (what the evidence of a check names).
BY_NAME: dict[str, Step] = {step.name: step for step in STEPS}


def build_script(inputs: ProbeInputs = ProbeInputs(), command_timeout_s: int = 30, *,
                 deadline_s: float | None = None, token: str = "none") -> str:
    """The probe for one host, as one ``sh -c`` argument. ``token`` marks the processes of this
    run; with ``deadline_s`` a watchdog ends them all that long after the start."""
    body = [f"GPUC_T={int(command_timeout_s)}", f"GPUC_RUN={shlex.quote(token)}", "export GPUC_RUN",
            f"GPUC_SYSCTLS={shlex.quote(' '.join(inputs.sysctls))}",
            f"GPUC_RUNTIMES={shlex.quote(' '.join(inputs.runtime_binaries))}",
            f"GPUC_UNITS={shlex.quote(' '.join(inputs.units))}",
            f"GPUC_DCGM={shlex.quote(inputs.dcgm_diag)}",
            "export GPUC_SYSCTLS GPUC_RUNTIMES GPUC_UNITS GPUC_DCGM"]
    if deadline_s is not None:
        body += [f"GPUC_DEADLINE={math.ceil(deadline_s)}", _WATCHDOG]
    body.append(_PRELUDE)
    for step in STEPS:
        # Each step runs in its own sh, so one step's failure (or `exit`) cannot end the probe.
        body.append(f"sec {step.name} sh -c {shlex.quote(step.command)}")
    body.append('echo "$M end"')
    if deadline_s is not None:
        # stop the watchdog and reap it (and it its sleep): no zombie left under an init that reaps nothing
        body.append('kill "$GPUC_W" 2>/dev/null; wait "$GPUC_W" 2>/dev/null')
    script = "\n".join(body)
    return "sh -c " + shlex.quote(script)


def finished(stdout: str) -> bool:
    """Whether the probe ran to its end (not ended by its deadline or a dropped connection)."""
    return f"\n{MARK} end\n" in f"\n{stdout}\n"


def parse(stdout: str) -> dict[str, Section]:
    """Split the probe's output into sections."""
    sections: dict[str, Section] = {}
    current: str | None = None
    out: list[str] = []
    err: list[str] = []
    for line in stdout.splitlines():
        if line.startswith(MARK + " "):
            parts = line.split()
            if len(parts) == 3 and parts[2] == "begin":
                current, out, err = parts[1], [], []
                continue
            if len(parts) in (3, 4) and parts[2].startswith("rc=") and parts[1] == current:
                rc = _number(parts[2][3:])
                timed_out = _number(parts[3][len("timeout="):]) if len(parts) == 4 else None
                sections[current] = Section(rc, "\n".join(out), "\n".join(err), timed_out)
                current = None
                continue
        if current is None:
            continue
        if line.startswith(OUT):
            out.append(line[len(OUT):])
        elif line.startswith(ERR):
            err.append(line[len(ERR):])
    if current is not None:  # the probe died mid-section (timeout, lost connection)
        sections[current] = Section(None, "\n".join(out), "\n".join(err))
    return sections


def _number(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
