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
    <stdout lines>            (stderr lines carry the prefix '@@e ')
    @@gpuconform <section> rc=<code>[ timeout=<seconds>]   (timeout=: killed by its command timeout)
    ...
    @@gpuconform end          (the probe ran to its end)
"""
from __future__ import annotations

import dataclasses
import math
import shlex

MARK = "@@gpuconform"
ERR = "@@e "

#: nvidia-smi fields read for identity and settings (all exist in 450+ drivers).
GPU_FIELDS = (
    "index", "name", "uuid", "pci.bus_id", "pci.device_id", "driver_version",
    "persistence_mode", "mig.mode.current", "mig.mode.pending", "ecc.mode.current",
)
#: nvidia-smi health fields, queried apart: an older driver rejecting one must not hide the rest.
GPU_HEALTH_FIELDS = (
    "index", "retired_pages.pending", "remapped_rows.pending", "remapped_rows.failure",
)

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
  rc=$( { { "$@"; echo $? >&5; } 2>&1 1>&3 | sed 's/^/@@e /' >&3; } 5>&1 )
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


def _steps(sysctls: tuple[str, ...]) -> list[tuple[str, str]]:
    q = ",".join(GPU_FIELDS)
    h = ",".join(GPU_HEALTH_FIELDS)
    tools = " ".join(TOOLS)
    steps = [
        ("osrelease", 'cat /proc/sys/kernel/osrelease'),
        ("os_release", 'cat /etc/os-release'),
        ("pid1", 'cat /proc/1/comm'),
        ("tools", f'for t in {tools}; do p=$(command -v "$t" 2>/dev/null) && echo "$t=$p"; done; true'),
        ("proc_modules", 'cat /proc/modules'),
        ("cmdline", 'cat /proc/cmdline'),
        ("modprobe_d", f'for d in {MODPROBE_DIRS}; do for f in "$d"/*.conf; do '
                       '[ -f "$f" ] && grep -H -i nouveau "$f"; done; done; true'),
        ("initramfs", 'if command -v lsinitrd >/dev/null 2>&1; then echo "tool=lsinitrd"; '
                      '$T lsinitrd "/boot/initramfs-$kver.img" | grep -i nouveau; '
                      'elif command -v lsinitramfs >/dev/null 2>&1; then echo "tool=lsinitramfs"; '
                      '$T lsinitramfs "/boot/initrd.img-$kver" | grep -i nouveau; '
                      'else echo "tool=none"; fi; true'),
        ("sig_enforce", 'cat /sys/module/module/parameters/sig_enforce'),
        ("lockdown", 'cat /sys/kernel/security/lockdown'),
        ("secure_boot", 'mokutil --sb-state'),
        ("dkms_sign", 'for f in /var/lib/dkms/mok.key /var/lib/dkms/mok.pub; do [ -r "$f" ] && echo "$f"; done; '
                      'grep -h -E "^[[:space:]]*(mok_signing_key|mok_certificate|sign_tool)=" '
                      '/etc/dkms/framework.conf /etc/dkms/framework.conf.d/*.conf 2>/dev/null; true'),
        ("mok_enrolled", 'mokutil --list-enrolled | grep -i -E "Subject:|CN="'),
        ("modinfo_nvidia", 'modinfo nvidia | grep -E "^(version|license|signer|sig_key|vermagic|filename):"'),
        ("headers", 'b="/lib/modules/$kver/build"; if [ -e "$b" ]; then echo "present $(readlink -f "$b")"; '
                    'elif [ -L "$b" ]; then echo "dangling $(readlink "$b")"; else echo "absent $b"; fi'),
        ("dkms_version", '$T dkms --version'),
        ("dkms_status", '$T dkms status'),
        # bash's `command -v` skips a file without the run bit, so look at /usr/bin/ld as well
        ("ld", 'p=$(command -v ld) || p=/usr/bin/ld; [ -e "$p" ] || { echo "path="; exit 127; }; echo "path=$p"; '
               'echo "real=$(readlink -f "$p")"; ls -lL "$p"; [ -x "$p" ] && echo "executable=yes" || echo "executable=no"; '
               '$T "$p" --version | head -n 1'),
        ("driver_version", 'cat /proc/driver/nvidia/version'),
        ("dev_nodes", 'ls -l /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia[0-9]*'),
        ("smi_gpus", f'$T nvidia-smi --query-gpu={q} --format=csv,noheader'),
        ("smi_health", f'$T nvidia-smi --query-gpu={h} --format=csv,noheader'),
        ("smi_list", '$T nvidia-smi -L'),
        ("systemd_units", 'systemctl show -p Id,LoadState,ActiveState,SubState,UnitFileState '
                          'nvidia-persistenced.service nvidia-fabricmanager.service containerd.service'),
        ("processes", 'for p in /proc/[0-9]*; do [ -r "$p/comm" ] && echo "${p#/proc/} $(cat "$p/comm")"; done; true'),
        ("fm_packages", "{ rpm -qa --qf '%{NAME} %{VERSION}\\n' 'nvidia-fabric*manager*' 2>/dev/null; "
                        "dpkg-query -W -f '${Package} ${Version}\\n' 'nvidia-fabricmanager*' 2>/dev/null; true; }"),
        ("fm_version", '$T nv-fabricmanager --version'),
        ("nvidia_ctk", '$T nvidia-ctk --version'),
        ("runtime_binary", 'p=/usr/bin/nvidia-container-runtime; ls -lL "$p" && { [ -x "$p" ] && echo "executable=yes" || echo "executable=no"; }'),
        ("containerd_dump", '$T containerd config dump'),
        ("containerd_files", f'for f in {CONTAINERD_FILES}; do [ -f "$f" ] && {{ echo "### file $f"; cat "$f"; }}; done; true'),
        ("sysctl", 'for k in ' + (" ".join(shlex.quote(k) for k in sysctls) or '""') +
                   '; do [ -n "$k" ] || continue; f="/proc/sys/$(echo "$k" | tr . /)"; '
                   'if [ -r "$f" ]; then echo "$k=$(cat "$f")"; else echo "$k=?"; fi; done; true'),
        ("kernel_log", 'if dmesg >/dev/null 2>&1; then echo "source=dmesg"; dmesg | grep -E "NVRM: Xid"; '
                       'elif command -v journalctl >/dev/null 2>&1 && journalctl -k -b -n 1 >/dev/null 2>&1; then '
                       'echo "source=journal"; journalctl -k -b --no-pager | grep -E "NVRM: Xid"; '
                       'else echo "source=none"; fi; true'),
    ]
    return steps


def build_script(sysctls: tuple[str, ...] = (), command_timeout_s: int = 30, *,
                 deadline_s: float | None = None, token: str = "none") -> str:
    """The probe for one host, as one ``sh -c`` argument. ``token`` marks the processes of this
    run; with ``deadline_s`` a watchdog ends them all that long after the start."""
    body = [f"GPUC_T={int(command_timeout_s)}", f"GPUC_RUN={shlex.quote(token)}", "export GPUC_RUN"]
    if deadline_s is not None:
        body += [f"GPUC_DEADLINE={math.ceil(deadline_s)}", _WATCHDOG]
    body.append(_PRELUDE)
    for name, cmd in _steps(tuple(sysctls)):
        # Each step runs in its own sh, so one step's failure (or `exit`) cannot end the probe.
        body.append(f"sec {name} sh -c {shlex.quote(cmd)}")
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
        if line.startswith(ERR):
            err.append(line[len(ERR):])
        else:
            out.append(line)
    if current is not None:  # the probe died mid-section (timeout, lost connection)
        sections[current] = Section(None, "\n".join(out), "\n".join(err))
    return sections


def _number(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None
