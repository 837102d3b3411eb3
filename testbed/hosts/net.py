"""Serve simulated hosts over real SSH: one network namespace and one sshd per scenario.

Every name and address is this checkout's own (:data:`CHECKOUT`, from the checkout's path), so
that the beds of two checkouts on one machine run side by side and neither's start or
``make hosts-down`` touches the other's. Layout: a bridge ``gc<checkout>br`` (10.213.<n>.1/24, n
from the checkout too) in the root namespace; per node a namespace ``gpuc-<checkout>-<scenario>``
holding one end of a veth pair (``eth0``, 10.213.<n>.<10+i>) and Debian's
``/usr/sbin/sshd`` with ``ChrootDirectory`` = the scenario's rendered root, its own host key and
config, key-only root login. An ``ssh_config`` names each node after its scenario, so the suite
runs ``--hosts=ssh://root@gpu-good,...`` and test ids carry the scenario name.

Everything created carries this checkout's prefix and is recorded in ``<state>/nodes.json``;
:func:`sweep` removes what an interrupted run of this checkout left behind (our recorded sshds,
``gpuc-<checkout>-*`` namespaces and their processes, ``gc<checkout>*`` links) and runs before
every start.

The simulated hosts stand for other machines: their sshds, and every session, shell and probe
below them, share one CPU cgroup (``gpuconform-hosts``, the default weight), so that a hundred
hosts' shells take the runner's CPU no more than one busy process would. Without it the kernel's
autogroups give every SSH session (its own setsid) as much CPU as the whole runner, and the suite
or a benchmark's bound would wait on CPU that, on a fleet, the hosts' own CPUs provide. Where this
machine has no writable cpu cgroup, the hosts share the CPU as plain processes (said once).

A weight shares the CPU only while both sides want it: an idle moment of the runner goes to the
hosts, so on a small machine the hosts still take CPU the runner then waits for. ``cpus`` caps
the group instead (a CPU quota): the hosts together get at most that many CPUs and the runner keeps
the rest, as a runner does beside a fleet whose hosts have CPUs of their own. Each start sets the
cap or lifts it, so no earlier bed's cap stays.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import hashlib
import subprocess
from pathlib import Path
from typing import Iterable

import tenacity

from testbed.hosts import rootfs, scenarios

REPO = Path(__file__).resolve().parents[2]
#: this checkout's tag, from its path: in every name and in the subnet of its simulated hosts
CHECKOUT = hashlib.sha1(str(REPO).encode()).hexdigest()[:6]
#: this checkout's links (a link name has at most 15 characters: gc1a2b3cv239)
PREFIX = f"gc{CHECKOUT}"
#: this checkout's network namespaces, one per node
NAMESPACE_PREFIX = f"gpuc-{CHECKOUT}-"
BRIDGE = f"{PREFIX}br"
SUBNET = f"10.213.{int(CHECKOUT, 16) % 254 + 1}"
GATEWAY = f"{SUBNET}.1"
FIRST_HOST = 10
SSHD = "/usr/sbin/sshd"
READY_TIMEOUT_S = 20.0
#: cgroup v1 (cpu controller) or v2 (unified, cpu enabled below the root): the hosts' CPU group
HOSTS_CGROUPS = (Path("/sys/fs/cgroup/cpu/gpuconform-hosts"), Path("/sys/fs/cgroup/gpuconform-hosts"))


@dataclasses.dataclass
class Node:
    name: str
    address: str
    namespace: str
    root: Path
    scenario: str
    pid: int | None = None


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


class SshNodes:
    """Build scenarios and serve them over SSH for the life of a ``with`` block.

    >>> with SshNodes(["gpu-good", "dkms-added"]) as nodes:
    ...     subprocess.run(["pytest", "-m", "node", f"--hosts={nodes.hosts_arg}",
    ...                     f"--ssh-config={nodes.ssh_config}"])
    """

    def __init__(self, names: Iterable[str], state: Path | None = None, copies: int = 1, cpus: float | None = None):
        """``copies`` > 1 serves each scenario that many times (``<name>-001`` ...), from one root:
        a fleet of like hosts for the benchmarks. ``cpus``: at most this many CPUs for all the
        hosts together (None: no cap, the group's weight only)."""
        self.names = list(names)
        self.copies = copies
        if cpus is not None and not 0 < cpus <= (os.cpu_count() or 1):
            raise ValueError(f"cpus: {cpus} is not between 0 and this machine's {os.cpu_count()} CPUs")
        self.cpus = cpus
        if copies < 1 or len(self.names) * copies > 240:
            raise ValueError(f"at most 240 nodes fit in {SUBNET}.0/24")
        self.state = Path(state or DEFAULT_STATE).absolute()
        self.nodes: list[Node] = []
        self.cgroup: Path | None = None

    # --- what callers use ---------------------------------------------------------------------

    @property
    def ssh_config(self) -> Path:
        return self.state / "ssh_config"

    @property
    def client_key(self) -> Path:
        return self.state / "client_key"

    @property
    def hosts_arg(self) -> str:
        return ",".join(f"ssh://root@{n.name}" for n in self.nodes)

    def root_of(self, name: str) -> Path:
        return self.state / name / "root"

    def __enter__(self) -> "SshNodes":
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- start / stop -------------------------------------------------------------------------

    def start(self) -> None:
        _check_sshd_can_use(self.state)
        sweep(self.state)
        self.state.mkdir(parents=True, exist_ok=True)
        self.state.chmod(0o755)
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # Debian sshd's privilege-separation dir
        self._keys()
        named = [(name if self.copies == 1 else f"{name}-{k:03d}", name)
                 for name in self.names for k in range(1, self.copies + 1)]
        self.nodes = [Node(host, f"{SUBNET}.{FIRST_HOST + i}", f"{NAMESPACE_PREFIX}{host}", self.root_of(name), name)
                      for i, (host, name) in enumerate(named)]
        for name in self.names:
            rootfs.render(scenarios.build(name), self.root_of(name), stage=self.state / ".bin")
        self._record()  # before anything exists, so a sweep finds a half-built run
        self.cgroup = hosts_cgroup()
        if self.cgroup is None:
            print("testbed/hosts: no writable cpu cgroup on this machine: the simulated hosts share the CPU "
                  "with the runner as plain processes")
            if self.cpus is not None:
                raise RuntimeError("testbed/hosts: cpus: no writable cpu cgroup on this machine to cap the hosts with")
        else:
            cap_cpus(self.cgroup, self.cpus)
        self._bridge()
        for i, node in enumerate(self.nodes):
            self._namespace(i, node)
            self._sshd(node)
            self._record()
        for node in self.nodes:
            self._wait_ready(node)
        self._write_ssh_config()
        self._check_login(self.nodes[0])

    def stop(self) -> None:
        sweep(self.state)
        self.nodes = []

    # --- pieces -------------------------------------------------------------------------------

    def _keys(self) -> None:
        if not self.client_key.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gpuconform-testbed",
                            "-f", str(self.client_key)], check=True)
        authorized = self.state / "authorized_keys"
        authorized.write_text(self.client_key.with_suffix(".pub").read_text())
        authorized.chmod(0o600)

    def _bridge(self) -> None:
        taken = [line.split()[1] for line in _ip("-o", "-4", "addr", "show", check=False).stdout.splitlines()
                 if f" {GATEWAY}/" in line]
        if taken:  # two checkouts whose paths hash to one subnet: said, never two routes for it
            raise RuntimeError(f"{SUBNET}.0/24, this checkout's simulated hosts' subnet, is already on {taken[0]} "
                               "(another checkout's simulated hosts?): stop those, or move this checkout")
        _ip("link", "add", BRIDGE, "type", "bridge")
        _ip("addr", "add", f"{GATEWAY}/24", "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")

    def _namespace(self, i: int, node: Node) -> None:
        outer, inner = f"{PREFIX}v{i}", f"{PREFIX}p{i}"
        _ip("netns", "add", node.namespace)
        _ip("link", "add", outer, "type", "veth", "peer", "name", inner)
        _ip("link", "set", inner, "netns", node.namespace)
        _ip("link", "set", outer, "master", BRIDGE)
        _ip("link", "set", outer, "up")
        ns = ("-n", node.namespace)
        _ip(*ns, "link", "set", inner, "name", "eth0")
        _ip(*ns, "addr", "add", f"{node.address}/24", "dev", "eth0")
        _ip(*ns, "link", "set", "eth0", "up")
        _ip(*ns, "link", "set", "lo", "up")

    def _sshd(self, node: Node) -> None:
        d = self.state / node.name
        d.mkdir(exist_ok=True)
        key = d / "ssh_host_ed25519_key"
        if not key.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
        config = d / "sshd_config"
        config.write_text(f"""# sshd of simulated host {node.name} (gpuconform test bed)
Port 22
ListenAddress {node.address}
HostKey {key}
PidFile {d / 'sshd.pid'}
AuthorizedKeysFile {self.state / 'authorized_keys'}
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
ChrootDirectory {node.root}
PrintMotd no
PrintLastLog no
UseDNS no
X11Forwarding no
AllowTcpForwarding no
AllowAgentForwarding no
PermitUserEnvironment no
MaxStartups 200:30:400
MaxSessions 100
LoginGraceTime 30
LogLevel ERROR
""")
        log = open(d / "sshd.log", "ab")
        proc = subprocess.Popen(["ip", "netns", "exec", node.namespace, SSHD, "-D", "-e", "-f", str(config)],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        log.close()
        node.pid = proc.pid  # `ip netns exec` execs sshd: same process
        if self.cgroup is not None:  # before its first session: every session is born in it
            (self.cgroup / "cgroup.procs").write_text(str(proc.pid))

    def _wait_ready(self, node: Node) -> None:
        """Until port 22 answers (bounded); fails at once with sshd's log if sshd died."""
        def attempt() -> None:
            if node.pid is not None and not _alive(node.pid):
                log = (self.state / node.name / "sshd.log").read_text(errors="replace")
                raise RuntimeError(f"sshd of {node.name} exited: {log.strip()[-2000:]}")
            with socket.create_connection((node.address, 22), timeout=1) as conn:
                if not conn.recv(64).startswith(b"SSH-"):
                    raise ConnectionError("no SSH banner")

        retry = tenacity.Retrying(
            stop=tenacity.stop_after_delay(READY_TIMEOUT_S),
            wait=tenacity.wait_exponential(multiplier=0.02, max=0.5),
            retry=tenacity.retry_if_exception_type(OSError),
            reraise=True,
        )
        try:
            retry(attempt)
        except OSError as exc:
            raise TimeoutError(f"{node.name} ({node.address}): port 22 did not answer within "
                               f"{READY_TIMEOUT_S}s, last error: {exc}") from exc

    def _write_ssh_config(self) -> None:
        entries = [f"# simulated GPU hosts of the gpuconform test bed: {len(self.nodes)} nodes"]
        for node in self.nodes:
            entries.append(f"""Host {node.name}
  HostName {node.address}
  User root
  IdentityFile {self.client_key}
  IdentitiesOnly yes
  StrictHostKeyChecking no
  UserKnownHostsFile /dev/null
  BatchMode yes
  ConnectTimeout 5
  LogLevel ERROR
""")
        self.ssh_config.write_text("\n".join(entries))

    def _check_login(self, node: Node) -> None:
        """One real login, so a broken chroot or key shows here rather than as 30 failing hosts."""
        out = subprocess.run(["ssh", "-F", str(self.ssh_config), node.name, "cat /proc/sys/kernel/osrelease"],
                             capture_output=True, text=True, timeout=30)
        expected = scenarios.build(node.scenario).kernel
        if out.returncode != 0 or out.stdout.strip() != expected:
            raise RuntimeError(f"login to {node.name} failed: rc={out.returncode} "
                               f"stdout={out.stdout!r} stderr={out.stderr!r}")

    def _record(self) -> None:
        data = {"nodes": [{"name": n.name, "address": n.address, "namespace": n.namespace,
                           "root": str(n.root), "scenario": n.scenario, "pid": n.pid} for n in self.nodes]}
        (self.state / "nodes.json").write_text(json.dumps(data, indent=2))


def _unsafe_parent(state: Path) -> Path | None:
    """The first existing folder at or above ``state`` that sshd's StrictModes refuses (not
    root-owned, or writable by group/others such as /tmp), else None."""
    for folder in [state, *state.parents]:
        if folder.exists():
            st = folder.stat()
            if st.st_uid != 0 or st.st_mode & 0o022:
                return folder
    return None


def state_folder(kind: str) -> Path:
    """Where simulated hosts keep their roots and keys: ``.state/<kind>`` in the repository, or,
    when the checkout lies below a folder sshd refuses (a clone under /tmp), a folder of this
    checkout's own under /var/lib/gpuconform."""
    local = REPO / ".state" / kind
    if _unsafe_parent(local) is None:
        return local
    return Path("/var/lib/gpuconform") / hashlib.sha1(str(REPO).encode()).hexdigest()[:10] / kind


DEFAULT_STATE = state_folder("hosts")


def _check_sshd_can_use(state: Path) -> None:
    """sshd refuses a ChrootDirectory or AuthorizedKeysFile below a folder that is not root-owned
    or is writable by group/others (such as /tmp): say so now rather than as failed logins."""
    folder = _unsafe_parent(state)
    if folder is not None:
        raise ValueError(f"state folder {state} is below {folder}, which is not root-owned or is "
                         "writable by group/others; sshd (ChrootDirectory, StrictModes) refuses that. "
                         "Leave --state out: the default picks a folder sshd accepts.")


# --- cleanup ----------------------------------------------------------------------------------

def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie child of ours counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def _ours(pid: int, state: Path) -> bool:
    """True for an sshd started from this state folder (its config path is on its command line)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return SSHD in cmdline and str(state) in cmdline


def _terminate(pids: Iterable[int]) -> None:
    """SIGTERM, then SIGKILL what is still there after a bounded wait; reaps our own children."""
    pids = [p for p in pids if _alive(p)]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        try:
            _until_gone(pids)
            return
        except tenacity.RetryError:
            continue


@tenacity.retry(stop=tenacity.stop_after_delay(3), wait=tenacity.wait_fixed(0.02),
                retry=tenacity.retry_if_result(bool))
def _until_gone(pids: list[int]) -> list[int]:
    for pid in pids:
        _reap(pid)
    return [p for p in pids if _alive(p)]


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def hosts_cgroup() -> Path | None:
    """The hosts' CPU group (made on first use); None where this machine has no writable one."""
    v1, v2 = HOSTS_CGROUPS
    control = v2.parent / "cgroup.subtree_control"
    candidates = [v1] if (v1.parent / "cpu.shares").exists() else []
    if control.exists() and "cpu" in control.read_text().split():
        candidates.append(v2)
    for group in candidates:
        try:
            group.mkdir(exist_ok=True)
            return group
        except OSError:
            continue
    return None


#: the CPU quota's period (microseconds), the kernel's default
QUOTA_PERIOD_US = 100_000


def cap_cpus(group: Path, cpus: float | None) -> None:
    """Cap ``group`` at ``cpus`` CPUs (a quota per period), or lift its cap (None)."""
    quota = -1 if cpus is None else int(cpus * QUOTA_PERIOD_US)
    if (group / "cpu.cfs_quota_us").exists():  # cgroup v1
        (group / "cpu.cfs_period_us").write_text(str(QUOTA_PERIOD_US))
        (group / "cpu.cfs_quota_us").write_text(str(quota))
    else:  # cgroup v2
        (group / "cpu.max").write_text(f"{'max' if quota < 0 else quota} {QUOTA_PERIOD_US}")


def sweep(state: Path = DEFAULT_STATE) -> None:
    """Remove every piece of a previous run of this checkout: recorded sshds, its namespaces (and
    the processes inside them, which only this test bed starts) and links; another checkout's
    are left alone."""
    state = Path(state).absolute()
    record = state / "nodes.json"
    if record.exists():
        try:
            recorded = json.loads(record.read_text()).get("nodes", [])
        except ValueError:
            recorded = []
        _terminate(n["pid"] for n in recorded if n.get("pid") and _ours(n["pid"], state))
    namespaces = [line.split()[0] for line in _ip("netns", "list", check=False).stdout.splitlines()
                  if line.startswith(NAMESPACE_PREFIX)]
    for ns in namespaces:
        pids = [int(p) for p in _ip("netns", "pids", ns, check=False).stdout.split()]
        _terminate(pids)
        _ip("netns", "del", ns, check=False)
    for line in _ip("-o", "link", "show", check=False).stdout.splitlines():
        name = line.split(":", 2)[1].strip().split("@")[0]
        if name.startswith(PREFIX):
            _ip("link", "del", name, check=False)
    record.unlink(missing_ok=True)
