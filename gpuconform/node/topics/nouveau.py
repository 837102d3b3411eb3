"""nouveau: not loaded, blacklisted in modprobe.d, and absent from the initramfs."""
from __future__ import annotations

from functools import cached_property

from gpuconform.errors import CannotTell
from gpuconform.node.topic import Base, CheckText, Companion, Step
from gpuconform.parsers import kernel

MODPROBE_DIRS = "/etc/modprobe.d /run/modprobe.d /usr/local/lib/modprobe.d /usr/lib/modprobe.d /lib/modprobe.d"

STEPS = (
    Step("modprobe_d", f'for d in {MODPROBE_DIRS}; do for f in "$d"/*.conf; do '
                       '[ -f "$f" ] && grep -H -i nouveau "$f"; done; done; true',
         "grep -H -i nouveau /etc/modprobe.d/*.conf /usr/lib/modprobe.d/*.conf ..."),
    Step("initramfs", 'if command -v lsinitrd >/dev/null 2>&1; then echo "tool=lsinitrd"; '
                      '$T lsinitrd "/boot/initramfs-$kver.img" | grep -i nouveau; '
                      'elif command -v lsinitramfs >/dev/null 2>&1; then echo "tool=lsinitramfs"; '
                      '$T lsinitramfs "/boot/initrd.img-$kver" | grep -i nouveau; '
                      'else echo "tool=none"; fi; true',
         "lsinitrd /boot/initramfs-$(uname -r).img | grep -i nouveau  (or lsinitramfs)"),
)
TOOLS = ("lsinitrd", "lsinitramfs")


class Facts(Base):
    @cached_property
    def modprobe_nouveau(self) -> list[tuple[str, list[str]]]:
        return kernel.parse_modprobe_grep(self.section("modprobe_d").out)

    @cached_property
    def initramfs_nouveau(self) -> kernel.InitramfsListing:
        listing = kernel.parse_initramfs(self.section("initramfs").out)
        if listing.tool == "none":
            raise CannotTell("neither lsinitrd nor lsinitramfs is installed on the host: the initramfs cannot be listed")
        return listing


#: one script for the three: blacklist, rebuild the initramfs, reboot while nouveau is loaded
_BLACKLIST = Companion("blacklist-nouveau.sh")
COMPANIONS = {
    "node.nouveau.not_loaded": _BLACKLIST,
    "node.nouveau.blacklisted": _BLACKLIST,
    "node.nouveau.not_in_initramfs": _BLACKLIST,
}


# -- the checks' words (their checks: tests/node/test_nouveau.py)
REBUILD_INITRAMFS = {"rhel": "dracut --force && reboot",
                     "debian": "update-initramfs -u && reboot",
                     "default": "rebuild the initramfs (dracut --force / update-initramfs -u) and reboot"}
BLACKLIST_FILE = "/etc/modprobe.d/blacklist-nouveau.conf"

NOUVEAU_NOT_LOADED: CheckText = {
    "title": "nouveau kernel module is not loaded",
    "fix": {k: f"blacklist nouveau (node.nouveau.blacklisted), then {v}" for k, v in REBUILD_INITRAMFS.items()},
    "evidence": ["proc_modules"],
}

NOUVEAU_BLACKLISTED: CheckText = {
    "title": "nouveau is blacklisted in modprobe.d",
    "fix": f"write {BLACKLIST_FILE}: blacklist nouveau, blacklist lbm-nouveau, options nouveau modeset=0, "
           "alias nouveau off, alias lbm-nouveau off",
    "evidence": ["modprobe_d"],
}

NOUVEAU_NOT_IN_INITRAMFS: CheckText = {
    "title": "initramfs of the running kernel carries no nouveau",
    "fix": REBUILD_INITRAMFS,
    "evidence": ["initramfs"],
}
