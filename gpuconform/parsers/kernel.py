"""Kernel facts from /proc and /sys: command line, lockdown, modprobe.d, Xid lines, os-release."""
from __future__ import annotations

import re
import shlex


def parse_cmdline(text: str) -> list[tuple[str, str | None]]:
    """/proc/cmdline → [(key, value or None)] in order (quotes honoured)."""
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    out = []
    for w in words:
        k, eq, v = w.partition("=")
        out.append((k, v if eq else None))
    return out


def cmdline_has(params: list[tuple[str, str | None]], wanted: str) -> bool:
    """``wanted`` is ``key=value`` (that exact pair, last occurrence wins) or ``key``.

    Several values in one comma list also count: rd.driver.blacklist=nouveau,foo has nouveau."""
    key, eq, value = wanted.partition("=")
    values = [v for k, v in params if k == key]
    if not values:
        return False
    if not eq:
        return True
    last = values[-1] or ""
    if key.endswith("blacklist"):
        return any(value in (v or "").split(",") for v in values)
    return last == value


def parse_lockdown(text: str) -> str | None:
    """``none [integrity] confidentiality`` → ``integrity``."""
    m = re.search(r"\[(\w+)\]", text)
    return m.group(1) if m else None


def parse_modprobe_grep(text: str) -> list[tuple[str, list[str]]]:
    """``grep -H`` lines of modprobe.d files → [(file, words)], comments dropped."""
    out = []
    for line in text.splitlines():
        path, sep, rest = line.partition(":")
        if not sep:
            continue
        rest = rest.split("#", 1)[0].strip()
        if rest:
            out.append((path, rest.split()))
    return out


_XID = re.compile(r"NVRM: Xid \((?P<pci>[^)]*)\): (?P<code>\d+)")


def parse_xids(text: str) -> list[tuple[int, str]]:
    """Kernel log lines → [(xid code, line)]."""
    return [(int(m["code"]), line.strip()) for line in text.splitlines() if (m := _XID.search(line))]


def parse_os_release(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        k, eq, v = line.partition("=")
        if eq and k.strip() and not k.startswith("#"):
            try:
                out[k.strip()] = shlex.split(v)[0] if v.strip() else ""
            except ValueError:
                out[k.strip()] = v.strip().strip('"')
    return out


def os_family(release: dict[str, str]) -> str | None:
    ids = {release.get("ID", "")} | set(release.get("ID_LIKE", "").split())
    for family, names in (("rhel", {"rhel", "fedora", "centos", "redos", "rocky", "almalinux", "ol"}),
                          ("debian", {"debian", "ubuntu"}), ("suse", {"suse", "sles", "opensuse"})):
        if ids & names:
            return family
    return None
