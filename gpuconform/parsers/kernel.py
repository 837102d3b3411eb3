"""Kernel facts from /proc, /sys and /boot: command line, lockdown, signature enforcement, modprobe.d,
initramfs listing, headers link, sysctls, Xid lines, os-release."""
from __future__ import annotations

import dataclasses
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
#: the seconds since boot that dmesg and `journalctl -o short-monotonic` put first: ``[  123.456]``
_MONOTONIC = re.compile(r"^\[\s*(\d+(?:\.\d+)?)\]")


@dataclasses.dataclass(frozen=True)
class Xid:
    code: int
    line: str
    at_s: float | None     # seconds after boot, when the line carries it


def parse_xids(text: str) -> list[Xid]:
    """Kernel log lines → their Xid events."""
    out = []
    for line in text.splitlines():
        if m := _XID.search(line):
            t = _MONOTONIC.match(line.strip())
            out.append(Xid(int(m["code"]), line.strip(), float(t[1]) if t else None))
    return out


#: an os-release value (os-release(5)): "double quoted" with shell escapes, 'single quoted', or a
#: bare word; read in one pass (shlex takes minutes over a 5 MB PRETTY_NAME)
_OS_RELEASE_VALUE = re.compile(r"""\s*(?:"((?:[^"\\]|\\.)*)"|'([^']*)'|([^\s"']*))""", re.DOTALL)
_SHELL_ESCAPE = re.compile(r"""\\([\\$"`])""")


def parse_os_release(text: str) -> dict[str, str]:
    """/etc/os-release → {key: value}; a value without its closing quote is kept as written."""
    out = {}
    for line in text.splitlines():
        k, eq, v = line.partition("=")
        if eq and k.strip() and not k.startswith("#"):
            m = _OS_RELEASE_VALUE.match(v)
            if m[1] is not None:
                value = _SHELL_ESCAPE.sub(r"\1", m[1])
            elif m[2] is not None:
                value = m[2]
            elif m[3] or not v.strip():
                value = m[3]
            else:  # an unclosed quote
                value = v.strip().strip("\"'")
            out[k.strip()] = value
    return out


def os_family(release: dict[str, str]) -> str | None:
    ids = {release.get("ID", "")} | set(release.get("ID_LIKE", "").split())
    for family, names in (("rhel", {"rhel", "fedora", "centos", "redos", "rocky", "almalinux", "ol"}),
                          ("debian", {"debian", "ubuntu"}), ("suse", {"suse", "sles", "opensuse"})):
        if ids & names:
            return family
    return None


def os_version_matches(version_id: str, wanted: str) -> bool:
    """Whether VERSION_ID ``version_id`` is release ``wanted`` or one of its point releases
    ('8' takes 8, 8.0 and 8.10, not 80; '8.0' takes 8.0 only)."""
    return version_id == wanted or version_id.startswith(wanted + ".")


@dataclasses.dataclass(frozen=True)
class InitramfsListing:
    """What the probe's initramfs step found: the lister used (lsinitrd, lsinitramfs, or none on
    the host) and the nouveau module files in the running kernel's initramfs."""
    tool: str
    nouveau_modules: tuple[str, ...]


_NOUVEAU_KO = re.compile(r"(^|/)nouveau\.ko(\.\w+)?\s*$")


def parse_initramfs(text: str) -> InitramfsListing:
    """``tool=<lister>`` then the listing's lines that mention nouveau. The listing also names
    /etc/modprobe.d/blacklist-nouveau.conf, which dracut and initramfs-tools copy in: only
    nouveau.ko[.xz|.zst|.gz] counts."""
    lines = text.splitlines()
    tool = lines[0].partition("=")[2] if lines and lines[0].startswith("tool=") else "none"
    found = tuple(x for x in lines[1:] if x.split() and _NOUVEAU_KO.search(x.split()[-1]))
    return InitramfsListing(tool, found)


@dataclasses.dataclass(frozen=True)
class Headers:
    """/lib/modules/<running kernel>/build: present (and where it leads), dangling or absent."""
    state: str
    path: str


def parse_headers(text: str) -> Headers:
    state, _, path = text.strip().partition(" ")
    return Headers(state, path)


def parse_sig_enforce(text: str) -> bool:
    """/sys/module/module/parameters/sig_enforce: Y or N."""
    return text.strip().upper().startswith("Y")


def parse_sysctl(text: str) -> dict[str, str | None]:
    """``key=value`` lines of the probe's sysctl step; ``key=?``: no such key on this kernel (None)."""
    out: dict[str, str | None] = {}
    for line in text.splitlines():
        k, _, v = line.partition("=")
        if k:
            out[k] = None if v == "?" else v.strip()
    return out


@dataclasses.dataclass(frozen=True)
class KernelLog:
    """The kernel log since boot, as far as it could be read: its source (dmesg, journal, or none
    readable) and its Xid events."""
    source: str
    xids: tuple[Xid, ...]
    uptime_s: float | None = None      # /proc/uptime when the log was read

    def within(self, hours: float | None) -> tuple[Xid, ...]:
        """The Xids of the last ``hours`` (all when None, or when a line's time is unknown)."""
        if hours is None or self.uptime_s is None:
            return self.xids
        return tuple(x for x in self.xids if x.at_s is None or self.uptime_s - x.at_s <= hours * 3600)


def parse_kernel_log(text: str) -> KernelLog:
    """``source=<dmesg|journal|none>``, ``uptime=<seconds>``, then the log's ``NVRM: Xid`` lines."""
    lines = text.splitlines()
    source = lines[0].partition("=")[2] if lines and lines[0].startswith("source=") else "none"
    uptime = None
    if len(lines) > 1 and lines[1].startswith("uptime="):
        value = lines[1].partition("=")[2].strip()
        uptime = float(value) if re.fullmatch(r"\d+(\.\d+)?", value) else None
    return KernelLog(source, tuple(parse_xids("\n".join(lines[1:]))), uptime)
