"""Companion fixes of the node checks: which script in ``remediation/`` fixes a failed check, with
which values from the host's facts and the profile, and how it is sent over the connection the
checks used.

The library is handed facts and expectations; it does not read the profile or run pytest.
A script runs on the host as ``env VAR=… sh -c '<lib.sh + script>' <name> [--apply]``: nothing is
copied to the host, and the script acts on the host's own root (the root of a ``chroot://``
target, the machine of ``local://``, the host at the other end of ``ssh://``).
"""
from __future__ import annotations

import dataclasses
import re
import shlex
from typing import Callable

from gpuconform import resources
from gpuconform.node.collect import run_on_host
from gpuconform.node.facts import NodeFacts

#: a host's or the profile's value in a fix text: one shell word when pasted, running nothing
q = shlex.quote
SOURCE_LIB = '. "$(dirname "$0")/lib.sh"'
#: order in which a host's scripts run: the linker before the DKMS build that needs it
ORDER = ("kernel-headers.sh", "fix-ld.sh", "dkms-install.sh", "blacklist-nouveau.sh", "kernel-cmdline.sh", "sysctl.sh",
         "persistenced.sh", "containerd-nvidia-runtime.sh", "fabricmanager.sh", "mig-reset.sh")


@dataclasses.dataclass(frozen=True)
class Fix:
    """One companion script with its values: ``does`` is what it runs on the host, in words."""
    script: str
    env: tuple[tuple[str, str], ...] = ()
    does: str = ""

    def text(self) -> str:
        """The fix as the report shows it: the concrete commands, then the script that runs them."""
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)
        return (f"{self.does} — remediation/{self.script} does it: "
                f"{env + ' ' if env else ''}remediation/{self.script} --apply "
                f"(or pytest -m node --remediate=apply --remediate-checks=…)")

    def command(self, apply: bool) -> str:
        """The shell command that runs the script on the host (lib.sh inlined)."""
        lib = resources.remediation_script("lib.sh")
        body = resources.remediation_script(self.script)
        assert SOURCE_LIB in body, f"{self.script} does not source lib.sh as {SOURCE_LIB}"
        program = body.replace(SOURCE_LIB, lib, 1)
        env = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)
        return (f"env {env} " if env else "") + (f"sh -c {shlex.quote(program)} {self.script}"
                                                 + (" --apply" if apply else ""))


def _rhel(facts: NodeFacts) -> bool:
    return facts.os_family != "debian"


def _nouveau(facts: NodeFacts, expected, param) -> Fix:
    k = facts.kernel_release
    rebuild = (f"dracut --force {q(f'/boot/initramfs-{k}.img')} {q(k)}" if _rhel(facts)
               else f"update-initramfs -u -k {q(k)}")
    return Fix("blacklist-nouveau.sh", (),
               f"blacklist nouveau in /etc/modprobe.d/blacklist-nouveau.conf, {rebuild}, reboot while nouveau is loaded")


def _cmdline(facts: NodeFacts, expected, param) -> Fix:
    add, remove = " ".join(expected.kernel.cmdline_required), " ".join(expected.kernel.cmdline_forbidden)
    if _rhel(facts):
        does = f"grubby --update-kernel=ALL {q('--args=' + add)} {q('--remove-args=' + remove)}, then reboot"
    else:
        does = f"GRUB_CMDLINE_LINUX in /etc/default/grub: add {q(add)}, remove {q(remove)}; update-grub; reboot"
    return Fix("kernel-cmdline.sh", (("ADD", add), ("REMOVE", remove)), does)


def _dkms_module(facts: NodeFacts, expected) -> str:
    names = expected.driver.dkms_module_names
    known = [e.module for e in facts.dkms_entries if e.module in names] if facts.tool("dkms") else []
    return (known or list(names))[0]


def _dkms(facts: NodeFacts, expected, param) -> Fix | None:
    if expected.driver.install != "dkms":
        return None
    m, v, k = _dkms_module(facts, expected), expected.driver.version, facts.kernel_release
    return Fix("dkms-install.sh", (("NVIDIA_VERSION", v), ("DKMS_MODULE", m), ("KERNEL", k)),
               f"dkms install -m {q(m)} -v {q(v)} -k {q(k)}")


def _ld(facts: NodeFacts, expected, param) -> Fix:
    return Fix("fix-ld.sh", (), "ln -sfn ld.bfd /usr/bin/ld (the linker lost its run bit), then the DKMS build")


def _sysctl(facts: NodeFacts, expected, param) -> Fix | None:
    rule = expected.sysctl.get(param or "")
    if rule is None:
        return None
    value = rule.eq if rule.eq is not None else rule.max if rule.max is not None else rule.min
    return Fix("sysctl.sh", (("SYSCTLS", f"{param}={value}"),),
               f"sysctl -w {q(f'{param}={value}')} and {q(f'{param} = {value}')} in /etc/sysctl.d/99-gpuconform.conf")


def _persistenced(facts: NodeFacts, expected, param) -> Fix | None:
    if not facts.systemd_is_init:
        return None  # no systemd: the daemon's unit cannot run; only persistence mode can be set
    if facts.process_running("nvidia-persistenced"):
        return None  # the daemon runs (with --no-persistence-mode): its unit must change, by hand
    return Fix("persistenced.sh", (), "systemctl enable nvidia-persistenced.service; "
                                      "systemctl start nvidia-persistenced.service")


def _persistence_mode(facts: NodeFacts, expected, param) -> Fix | None:
    if facts.systemd_is_init:
        return _persistenced(facts, expected, param)
    return Fix("persistenced.sh", (), "nvidia-smi -pm 1 (no systemd: nvidia-persistenced cannot run here; "
                                      "lost at reboot)")


def _containerd(facts: NodeFacts, expected, param) -> Fix:
    b = expected.container_runtime.runtime_binary
    return Fix("containerd-nvidia-runtime.sh", (("RUNTIME_BINARY", b),),
               "nvidia-ctk runtime configure --runtime=containerd --set-as-default "
               "--config=/etc/containerd/config.toml; systemctl restart containerd")


def _headers(facts: NodeFacts, expected, param) -> Fix:
    k = facts.kernel_release
    does = (f"dnf install --disableexcludes=all <kernel package>-devel-{q(k)} ({q(f'kernel-lt-devel-{k}')} on RED OS)"
            if _rhel(facts) else f"apt-get install {q(f'linux-headers-{k}')}")
    return Fix("kernel-headers.sh", (("KERNEL", k),), does)


def _fabric_manager(facts: NodeFacts, expected, param) -> Fix:
    loaded = facts.driver_proc_version
    if loaded and loaded.version != expected.driver.version:
        return None  # the driver itself is not the profile's: fix the driver, not fabric manager
    v = expected.driver.version
    major = v.split(".")[0]
    pkg = (f"dnf install {q(f'nvidia-fabric-manager-{v}')}" if _rhel(facts)
           else f"apt-get install {q(f'nvidia-fabricmanager-{major}={v}-1')}")
    return Fix("fabricmanager.sh", (("NVIDIA_VERSION", v),),
               f"{pkg}; systemctl enable nvidia-fabricmanager; systemctl restart nvidia-fabricmanager")


def _mig_pending(facts: NodeFacts, expected, param) -> Fix:
    gpus = ",".join(str(g.index) for g in facts.gpus if g.mig_mode_pending != g.mig_mode_current)
    return Fix("mig-reset.sh", (), f"drain the node, stop the GPU's clients, nvidia-smi -r -i {gpus or '<gpu>'} "
                                   f"(or reboot), uncordon")


#: check id → the companion fix for a failure of it on these facts (None: no script fits)
COMPANIONS: dict[str, Callable[[NodeFacts, object, str | None], Fix | None]] = {
    "node.nouveau.not_loaded": _nouveau,
    "node.nouveau.blacklisted": _nouveau,
    "node.nouveau.not_in_initramfs": _nouveau,
    "node.kernel.cmdline_required": _cmdline,
    "node.kernel.cmdline_forbidden": _cmdline,
    "node.signing.lockdown": _cmdline,
    "node.dkms.nvidia_installed": _dkms,
    "node.toolchain.ld_runs": _ld,
    "node.sysctl": _sysctl,
    "node.persistenced.enabled": _persistenced,
    "node.persistenced.active": _persistenced,
    "node.persistenced.running": _persistenced,
    "node.gpu.persistence_mode": _persistence_mode,
    "node.containerd.nvidia_runtime": _containerd,
    "node.containerd.nvidia_default": _containerd,
    "node.kernel.headers": _headers,
    "node.fabricmanager.version": _fabric_manager,
    "node.fabricmanager.active": _fabric_manager,
    "node.mig.no_pending": _mig_pending,
}


def companion(check_id: str, facts: NodeFacts | None, expected, param: str | None) -> Fix | None:
    """The companion fix of a failed check on this host, or None."""
    make = COMPANIONS.get(check_id)
    if make is None or facts is None or facts.error or expected is None:
        return None
    try:
        return make(facts, expected, param)
    except Exception:  # a fact the fix text needs could not be read: the check's own fix stands
        return None


def ordered(fixes: list[Fix]) -> list[Fix]:
    """Distinct fixes in the order they must run."""
    unique = list(dict.fromkeys(fixes))
    return sorted(unique, key=lambda f: ORDER.index(f.script) if f.script in ORDER else len(ORDER))


@dataclasses.dataclass(frozen=True)
class ScriptRun:
    """What a script said: its exit status and output, and the reboot it asks for."""
    rc: int
    output: str

    @property
    def failed(self) -> bool:
        return self.rc != 0

    @property
    def reboot_reasons(self) -> list[str]:
        return re.findall(r"^reboot required: (.*)$", self.output, re.MULTILINE)

    @property
    def nothing_to_do(self) -> bool:
        return self.rc == 0 and "nothing to do" in self.output


def run_script(host, fix: Fix, apply: bool) -> ScriptRun:
    """Run ``fix`` on a testinfra host over its connection; transport errors are a failed run."""
    try:
        res = run_on_host(host, fix.command(apply))
    except Exception as exc:  # ssh gone, chroot missing: the fix did not run
        return ScriptRun(255, f"could not run {fix.script} on the host: {type(exc).__name__}: {exc}")
    return ScriptRun(res.rc, (res.stdout + res.stderr).strip())


def outcome(apply: bool, run: ScriptRun, rechecked: str | None) -> tuple[str, str]:
    """(state, why) of one failed check after its script: ``rechecked`` is None when the check
    now passes, else the re-check's message."""
    if not apply:
        return "planned", "dry run: nothing changed"
    if run.failed:
        return "fix failed", f"{run.output.splitlines()[-1] if run.output else f'exit {run.rc}'}"
    if rechecked is None:
        return "fixed", "the re-check passes"
    if run.reboot_reasons:
        return "reboot required", "; ".join(run.reboot_reasons)
    return "fix applied", f"the re-check still fails: {rechecked}"
