"""Text safe for the terminal and CI logs: a host's GPU name, an Xid line or a test id carrying an
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
