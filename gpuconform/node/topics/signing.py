"""Module signing: enforcement, lockdown, Secure Boot, the DKMS signing key and the MOK it must be in."""
from __future__ import annotations

from functools import cached_property

from gpuconform.node.topic import Base, CheckText, Step
from gpuconform.node.topics.kernel import CMDLINE
from gpuconform.parsers import dkms, kernel, kmod

STEPS = (
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
)
TOOLS = ("mokutil", "modinfo")


class Facts(Base):
    @cached_property
    def sig_enforce(self) -> bool:
        sec = self.section("sig_enforce")
        # unreadable: a kernel built without CONFIG_MODULE_SIG enforces nothing
        return sec.ok and kernel.parse_sig_enforce(sec.out)

    @cached_property
    def lockdown(self) -> str:
        sec = self.section("lockdown")
        # unreadable: no lockdown LSM (or securityfs not mounted), so no lockdown
        return (kernel.parse_lockdown(sec.out) if sec.ok else None) or "none"

    @cached_property
    def dkms_signing(self) -> dkms.Signing:
        return dkms.parse_signing(self.section("dkms_sign").out)

    @cached_property
    def mok_enrolled(self) -> list[str] | None:
        """Subjects of enrolled MOK keys; None when mokutil is not there to ask."""
        if not self.tool("mokutil"):
            return None
        return self.section("mok_enrolled").out.splitlines()

    @cached_property
    def modinfo_nvidia(self) -> dict[str, str]:
        return kmod.parse_modinfo(self.section("modinfo_nvidia").out)


COMPANIONS = {
    "node.signing.lockdown": CMDLINE,  # lockdown= on the kernel command line
}


# -- the checks' words (their checks: tests/node/test_signing.py)
CMDLINE_FIX = {"rhel": "grubby --update-kernel=ALL --args='module.sig_enforce=0' --remove-args='lockdown'; "
                       "grub2-mkconfig -o /boot/grub2/grub.cfg; reboot",
               "debian": "add module.sig_enforce=0 to GRUB_CMDLINE_LINUX, remove lockdown=; update-grub; reboot",
               "default": "boot with module.sig_enforce=0 and without lockdown=, or sign the module with an "
                          "enrolled MOK key"}

SIGNING_ENFORCEMENT: CheckText = {
    "title": "Module signature enforcement is as the profile requires",
    "fix": CMDLINE_FIX,
    "evidence": ["sig_enforce", "cmdline"],
}

SIGNING_LOCKDOWN: CheckText = {
    "title": "Kernel lockdown mode is one the profile allows",
    "fix": CMDLINE_FIX,
    "evidence": ["lockdown", "cmdline"],
}

SIGNING_DRIVER_LOADS: CheckText = {
    "title": "The NVIDIA driver loads under the signature policy",
    "fix": CMDLINE_FIX,
    "evidence": ["sig_enforce", "lockdown", "proc_modules", "modinfo_nvidia"],
}

SIGNING_DKMS_REBUILD_SIGNED: CheckText = {
    "title": "A DKMS rebuild for the next kernel will load too",
    "fix": "Either boot with module.sig_enforce=0 (the article's choice), or give DKMS a signing key: "
           "set mok_signing_key/mok_certificate in /etc/dkms/framework.conf and enroll the certificate "
           "with `mokutil --import` (then reboot to confirm enrollment).",
    "evidence": ["sig_enforce", "lockdown", "dkms_sign", "mok_enrolled"],
}
