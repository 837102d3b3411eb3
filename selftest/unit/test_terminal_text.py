"""What reaches the terminal: control sequences from hosts stripped, the writer's colours kept."""
import io

import pytest
from _pytest._io import TerminalWriter

from gpuconform.safetext import guard, terminal_text


@pytest.mark.parametrize("raw", [
    "\x1b]52;c;cHduZWQ=\x07",          # OSC 52: write the reader's clipboard
    "\x1b]0;pwned\x1b\\",              # OSC 0: window title, ST-terminated
    "\x1b]8;;http://evil\x07",         # OSC 8: a hyperlink
    "\x1b[2J\x1b[H",                   # clear the screen, cursor home
    "\x1b[1A\x1b[2K",                  # up one line, erase it: rewrite what was printed
    "\x1b[8m",                         # concealed text
    "\x9b2J", "\x9d0;pwned\x9c",       # the 8-bit C1 forms
    "\x1bP+q544e\x1b\\",               # DCS
    "\x1bc",                           # full reset
    "\r", "\x08\x08\x08", "\x07", "\x00", "\x7f",
])
def test_control_sequences_are_stripped(raw):
    assert terminal_text(f"GPU 0: H100{raw} ok\tdone\n") == "GPU 0: H100 ok\tdone\n"


def test_an_unterminated_string_ends_at_the_line_end():
    assert terminal_text("GPU 0: H100\x1b]0;title never ended\nnext line") == "GPU 0: H100\nnext line"


def test_plain_text_is_kept():
    text = "E   AssertionError: expected NVIDIA H100 80GB HBM3, found GPU 0: NVIDIA H200 — ²µ\n\tnext"
    assert terminal_text(text) == text


def test_guarded_writer_keeps_its_colours_and_its_line_rewrite():
    out = io.StringIO()
    tw = TerminalWriter(out)
    tw.hasmarkup = True
    guard(tw)
    guard(tw)  # once only
    tw.line("found \x1b]0;pwned\x07H100", red=True)
    tw.write("\rcollecting 3 items")
    assert out.getvalue() == "\x1b[31mfound H100\x1b[0m\n\rcollecting 3 items"
