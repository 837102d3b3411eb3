"""Text for the terminal and CI logs: a host's GPU name, an Xid line or a test id carrying an
escape sequence must not set the window title (OSC 0), write the clipboard (OSC 52), clear the
screen or rewrite what was printed before. One function strips them, and one writer, pytest's,
applies it to everything pytest and the suite print (:func:`guard`)."""
from __future__ import annotations

import re

#: ESC sequences (CSI, the OSC/DCS/SOS/PM/APC strings up to their terminator, two-character
#: escapes), their 8-bit C1 forms, and every other C0/C1 control but newline and tab.
_CONTROL = re.compile(r"""
      \x1b\[ [0-?]* [\x20-/]* [@-~]?                              # CSI: ESC [ params final
    | \x9b [0-?]* [\x20-/]* [@-~]?                                # 8-bit CSI
    | (?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f]) [^\x07\x1b\x9c\n]*  # OSC, DCS, SOS, PM, APC strings ...
      (?:\x07|\x1b\\|\x9c)?                                       # ... and their terminator
    | \x1b [\x20-/]* [0-~]?                                       # any other escape
    | [\x00-\x08\x0b-\x1f\x7f-\x9f]                               # any other control character
""", re.X)


def terminal_text(text: str) -> str:
    """``text`` without control sequences; newlines and tabs stay."""
    return _CONTROL.sub("", text) if text else text


def guard(writer) -> None:
    """Make pytest's terminal writer strip control sequences from whatever it is asked to write;
    its own colours, added after, stay. A leading carriage return is the writer's own way of
    rewriting the current line (pytest's progress), and stays too."""
    if getattr(writer, "gpuconform_guarded", False):
        return
    write = writer.write

    def write_text(msg: str, **markup) -> None:
        if msg.startswith("\r"):
            return write("\r" + terminal_text(msg[1:]), **markup)
        return write(terminal_text(msg), **markup)

    writer.write = write_text
    writer.gpuconform_guarded = True


def remediation_counts(rs: list[dict]) -> str:
    """``--remediate`` outcomes counted by state, in the order a reader acts on them."""
    order = ("fix failed", "reboot required", "fix applied", "fixed", "planned")
    counts = {s: sum(r["state"] == s for r in rs) for s in order}
    return ", ".join(f"{n} {s}" for s, n in counts.items() if n)


def remediation_lines(doc: dict, plan_lines: int = 6) -> list[str]:
    """What ``--remediate`` did (apply) or would do (plan), per host and check: the terminal's
    share of the report's remediation table."""
    rs = doc.get("remediation") or []
    if not rs:
        return []
    mode = rs[0]["mode"]
    head = (f"gpuconform: remediation plan (--remediate=plan, nothing changed): {len(rs)} fix(es)" if mode == "plan"
            else f"gpuconform: remediation (--remediate={mode}): {remediation_counts(rs)}")
    out = [head]
    for r in sorted(rs, key=lambda r: (r["host"], r["check_id"], r.get("param") or "")):
        check = r["check_id"] + (f"[{r['param']}]" if r.get("param") else "")
        if mode == "plan":
            out.append(f"  {r['host']}  {check}  {r['script']}:")
            lines = [line for line in (r.get("output") or "").splitlines() if line.strip()]
            out += [f"      {line}" for line in lines[:plan_lines]]
            if len(lines) > plan_lines:
                out.append(f"      … {len(lines) - plan_lines} more line(s) in the report")
        else:
            out.append(f"  {r['host']}  {check}: {r['state']} — {r['reason']}")
    return out
