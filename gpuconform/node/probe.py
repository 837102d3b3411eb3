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

from gpuconform.parsers.nvidia_smi import (CLOCK_FIELDS, GPU_FIELDS, GPU_HEALTH_FIELDS, MEMORY_ERROR_FIELDS,
                                           PCIE_FIELDS)

MARK = "@@gpuconform"
OUT = "| "
ERR = "@@e "

#: Tools whose presence is itself a fact ("missing tool" is a verdict, not a crash).
TOOLS = (
    "nvidia-smi", "dkms", "systemctl", "containerd", "nvidia-ctk", "nvidia-container-runtime",
    "lsinitrd", "lsinitramfs", "dmesg", "journalctl", "mokutil", "rpm", "dpkg-query",
    "nv-fabricmanager", "ld", "timeout", "modinfo",
)

CONTAINERD_FILES = "/etc/containerd/config.toml /etc/containerd/conf.d/*.toml"
MODPROBE_DIRS = "/etc/modprobe.d /run/modprobe.d /usr/local/lib/modprobe.d /usr/lib/modprobe.d /lib/modprobe.d"

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
class Section:
    """What one probe step printed."""
    rc: int | None
    out: str
    err: str
    timed_out_s: int | None = None  # killed by its command timeout (profile timeouts.command_s)

    @property
    def ok(self) -> bool:
        return self.rc == 0

    @property
    def failure(self) -> str:
        """Why the step did not succeed, in a few words: its timeout, its stderr or its exit code."""
        if self.timed_out_s is not None:
            return f"timed out after {self.timed_out_s} s (timeouts.command_s)"
        return self.err.strip() or f"exit {self.rc}"


@dataclasses.dataclass(frozen=True)
class ProbeInputs:
    """What the probe reads that the profile names (``LoadedProfile.probe_inputs``): passed to the
    host as shell variables, so the steps stay one fixed list."""
    sysctls: tuple[str, ...] = ()
    runtime_binaries: tuple[str, ...] = ("/usr/bin/nvidia-container-runtime",)
    units: tuple[str, ...] = ("nvidia-persistenced.service", "nvidia-fabricmanager.service", "containerd.service")
    dcgm_diag: str = ""      # the DCGM diagnostic level this host's profile asks for ("": none; it loads the GPU)


@dataclasses.dataclass(frozen=True)
class Step:
    """One probe section: its name, the POSIX sh it runs on the host (in its own ``sh -c``; ``$T``
    bounds a command by timeouts.command_s, ``$kver`` is the running kernel, ``$GPUC_SYSCTLS``,
    ``$GPUC_RUNTIMES``, ``$GPUC_UNITS`` are the :class:`ProbeInputs`), and the command as the
    report shows it beside the section's output."""
    name: str
    command: str
    shown: str


_TOOL_LIST = " ".join(TOOLS)
def _query(fields: tuple[str, ...]) -> str:
    return "nvidia-smi --query-gpu=" + ",".join(fields) + " --format=csv,noheader"


_GPU_QUERY = _query(GPU_FIELDS)
_HEALTH_QUERY = _query(GPU_HEALTH_FIELDS)
_UNIT_PROPERTIES = "Id,LoadState,ActiveState,SubState,UnitFileState"

#: Every step of the probe, in the order it runs.
STEPS: tuple[Step, ...] = (
    Step("osrelease", "cat /proc/sys/kernel/osrelease", "cat /proc/sys/kernel/osrelease"),
    Step("os_release", "cat /etc/os-release", "cat /etc/os-release"),
    Step("pid1", "cat /proc/1/comm", "cat /proc/1/comm"),
    Step("tools", f'for t in {_TOOL_LIST}; do p=$(command -v "$t" 2>/dev/null) && echo "$t=$p"; done; true',
         f"command -v {_TOOL_LIST}"),
    Step("proc_modules", "cat /proc/modules", "cat /proc/modules"),
    Step("cmdline", "cat /proc/cmdline", "cat /proc/cmdline"),
    Step("modprobe_d", f'for d in {MODPROBE_DIRS}; do for f in "$d"/*.conf; do '
                       '[ -f "$f" ] && grep -H -i nouveau "$f"; done; done; true',
         "grep -H -i nouveau /etc/modprobe.d/*.conf /usr/lib/modprobe.d/*.conf ..."),
    Step("initramfs", 'if command -v lsinitrd >/dev/null 2>&1; then echo "tool=lsinitrd"; '
                      '$T lsinitrd "/boot/initramfs-$kver.img" | grep -i nouveau; '
                      'elif command -v lsinitramfs >/dev/null 2>&1; then echo "tool=lsinitramfs"; '
                      '$T lsinitramfs "/boot/initrd.img-$kver" | grep -i nouveau; '
                      'else echo "tool=none"; fi; true',
         "lsinitrd /boot/initramfs-$(uname -r).img | grep -i nouveau  (or lsinitramfs)"),
    Step("sig_enforce", "cat /sys/module/module/parameters/sig_enforce",
         "cat /sys/module/module/parameters/sig_enforce"),
    Step("lockdown", "cat /sys/kernel/security/lockdown", "cat /sys/kernel/security/lockdown"),
    Step("secure_boot", "mokutil --sb-state", "mokutil --sb-state"),
    Step("dkms_sign", 'for f in /var/lib/dkms/mok.key /var/lib/dkms/mok.pub; do [ -r "$f" ] && echo "$f"; done; '
                      'grep -h -E "^[[:space:]]*(mok_signing_key|mok_certificate|sign_tool)=" '
                      '/etc/dkms/framework.conf /etc/dkms/framework.conf.d/*.conf 2>/dev/null; true',
         "ls /var/lib/dkms/mok.{key,pub}; grep mok_ /etc/dkms/framework.conf"),
    Step("mok_enrolled", 'mokutil --list-enrolled | grep -i -E "Subject:|CN="', "mokutil --list-enrolled"),
    Step("modinfo_nvidia", 'modinfo nvidia | grep -E "^(version|license|signer|sig_key|vermagic|filename):"',
         "modinfo nvidia"),
    Step("headers", 'b="/lib/modules/$kver/build"; if [ -e "$b" ]; then echo "present $(readlink -f "$b")"; '
                    'elif [ -L "$b" ]; then echo "dangling $(readlink "$b")"; else echo "absent $b"; fi',
         "readlink -f /lib/modules/$(uname -r)/build"),
    Step("dkms_version", "$T dkms --version", "dkms --version"),
    Step("dkms_status", "$T dkms status", "dkms status"),
    # bash's `command -v` skips a file without the run bit, so look at /usr/bin/ld as well
    Step("ld", 'p=$(command -v ld) || p=/usr/bin/ld; [ -e "$p" ] || { echo "path="; exit 127; }; echo "path=$p"; '
               'echo "real=$(readlink -f "$p")"; ls -lL "$p"; [ -x "$p" ] && echo "executable=yes" || echo "executable=no"; '
               '$T "$p" --version | head -n 1',
         "command -v ld; ls -lL $(command -v ld); ld --version"),
    Step("driver_version", "cat /proc/driver/nvidia/version", "cat /proc/driver/nvidia/version"),
    Step("dev_nodes", "ls -l /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia[0-9]*",
         "ls -l /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia[0-9]*"),
    Step("smi_gpus", f"$T {_GPU_QUERY}", _GPU_QUERY),
    Step("smi_health", f"$T {_HEALTH_QUERY}", _HEALTH_QUERY),
    Step("smi_list", "$T nvidia-smi -L", "nvidia-smi -L"),
    Step("systemd_units", f"set -f; systemctl show -p {_UNIT_PROPERTIES} $GPUC_UNITS",
         f"systemctl show -p {_UNIT_PROPERTIES} <the profile's units>"),
    Step("processes", 'for p in /proc/[0-9]*; do [ -r "$p/comm" ] && echo "${p#/proc/} $(cat "$p/comm")"; done; true',
         "cat /proc/[0-9]*/comm"),
    # dpkg lists packages in every state (removed but not purged: rc, merely known: un), so its
    # state goes with each line; rpm -qa lists installed packages only (each installed version)
    Step("fm_packages", "{ rpm -qa --qf 'rpm %{NAME} %{VERSION}\\n' 'nvidia-fabric*manager*' 2>/dev/null; "
                        "dpkg-query -W -f 'dpkg ${db:Status-Abbrev} ${Package} ${Version}\\n' "
                        "'nvidia-fabricmanager*' 2>/dev/null; true; }",
         "rpm -qa 'nvidia-fabric*manager*' || dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n' "
         "'nvidia-fabricmanager*'"),
    Step("fm_version", "$T nv-fabricmanager --version", "nv-fabricmanager --version"),
    Step("nvidia_ctk", "$T nvidia-ctk --version", "nvidia-ctk --version"),
    Step("runtime_binary", 'set -f; for p in $GPUC_RUNTIMES; do if [ -e "$p" ]; then ls -lL "$p"; '
                           'if [ -x "$p" ]; then echo "$p: executable"; else echo "$p: not executable"; fi; '
                           'else echo "$p: missing"; fi; done; true',
         "ls -lL <container_runtime.runtime_binary>"),
    Step("containerd_dump", "$T containerd config dump", "containerd config dump"),
    Step("containerd_files", f'for f in {CONTAINERD_FILES}; do [ -f "$f" ] && {{ echo "### file $f"; cat "$f"; }}; done; true',
         f"cat {CONTAINERD_FILES}"),
    # CDI specs where containerd looks by default, each with its kind (vendor/class): the top-level
    # `kind` of a spec in YAML or JSON (tags.cncf.io/container-device-interface, specs-go/config.go)
    Step("cdi_specs", 'for d in /etc/cdi /var/run/cdi; do for f in "$d"/*.yaml "$d"/*.yml "$d"/*.json; do '
                      '[ -f "$f" ] || continue; k=$(grep -o -E \'"?kind"?[[:space:]]*:[[:space:]]*"?[A-Za-z0-9._/-]+\' "$f" '
                      '| head -n 1 | sed -E \'s/.*:[[:space:]]*"?//\'); echo "kind=$k $f"; done; done; true',
         "grep kind /etc/cdi/* /var/run/cdi/*"),
    Step("smi_pcie", f"$T {_query(PCIE_FIELDS)}", _query(PCIE_FIELDS)),
    Step("smi_clocks", f"$T {_query(CLOCK_FIELDS)}", _query(CLOCK_FIELDS)),
    Step("smi_memory_errors", f"$T {_query(MEMORY_ERROR_FIELDS)}", _query(MEMORY_ERROR_FIELDS)),
    Step("nvlink_status", "$T nvidia-smi nvlink -s", "nvidia-smi nvlink -s"),
    Step("nvlink_errors", "$T nvidia-smi nvlink -e", "nvidia-smi nvlink -e"),
    # the GPU Operator validator's status files (gpu-operator validator/main.go: /run/nvidia/
    # validations, driver-ready holding IS_HOST_DRIVER=…): names, and driver-ready's two keys
    # prefixed, so that no file's content can pass for another file
    Step("validations", 'D=/run/nvidia/validations; for f in driver-ready toolkit-ready cuda-ready plugin-ready; do '
                        '[ -e "$D/$f" ] && echo "ready $f"; done; [ -r "$D/driver-ready" ] && '
                        'sed -n -E "s/^(IS_HOST_DRIVER|NVIDIA_DRIVER_ROOT)=(.*)$/driver \\1=\\2/p" "$D/driver-ready"; true',
         "ls /run/nvidia/validations; cat /run/nvidia/validations/driver-ready"),
    # opt-in only (health.dcgm_diag): the diagnostic loads the GPU; -j prints its per-test results
    Step("dcgm_diag", '[ -n "$GPUC_DCGM" ] || { echo "not asked"; exit 0; }; '
                      'command -v dcgmi >/dev/null 2>&1 || { echo "no dcgmi"; exit 0; }; $T dcgmi diag -r "$GPUC_DCGM" -j',
         "dcgmi diag -r <health.dcgm_diag> -j"),
    Step("sysctl", 'set -f; for k in $GPUC_SYSCTLS; do f="/proc/sys/$(echo "$k" | tr . /)"; '
                   'if [ -r "$f" ]; then echo "$k=$(cat "$f")"; else echo "$k=?"; fi; done; true',
         "cat /proc/sys/<key>  (each sysctl key of the profile)"),
    # both sources stamp lines with seconds since boot (dmesg; journal -o short-monotonic), set
    # against /proc/uptime for the profile's time window
    Step("kernel_log", 'up="uptime=$(cut -d" " -f1 /proc/uptime 2>/dev/null)"; '
                       'if dmesg >/dev/null 2>&1; then echo "source=dmesg"; echo "$up"; dmesg | grep -E "NVRM: Xid"; '
                       'elif command -v journalctl >/dev/null 2>&1 && journalctl -k -b -n 1 >/dev/null 2>&1; then '
                       'echo "source=journal"; echo "$up"; journalctl -k -b --no-pager -o short-monotonic | grep -E "NVRM: Xid"; '
                       'else echo "source=none"; fi; true',
         "dmesg | grep 'NVRM: Xid'  (or journalctl -k -b -o short-monotonic); cat /proc/uptime"),
)

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
