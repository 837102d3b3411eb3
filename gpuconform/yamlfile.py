"""Reading the suite's YAML inputs (profile, waivers, kubeconfig): every mistake becomes one line
naming the file, the field path and what was expected.

Parsed by :mod:`gpuconform.yamlparse` (duplicate keys, impossible dates, deep nesting and alias
bombs are errors with their line); only a regular file of sane size is read (not a FIFO that
never ends, not ``/dev/zero``): ``read_file`` is the one gate of every file an input names (profile, waivers, kubeconfig, baseline, ssh files)."""
from __future__ import annotations

import os
import re
import stat

import yaml
from pydantic import ValidationError

from gpuconform import yamlparse
from gpuconform.redact import redact, secret_name

MAX_BYTES = 4 << 20


def check_file(path: str, what: str, error: type[Exception], max_bytes: int = MAX_BYTES) -> os.stat_result:
    """``path`` is a regular file of at most ``max_bytes``, or ``error`` with one line."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte in the path
        raise error(f"{path!r}: cannot read {what}: {exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: cannot read {what}: it is a directory")
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if \
            stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file"
        raise error(f"{path}: cannot read {what}: it is {kind}, not a regular file")
    if st.st_size > max_bytes:
        raise error(f"{path}: cannot read {what}: {st.st_size} bytes, more than {_size(max_bytes)}")
    return st


def read_file(path: str, what: str, error: type[Exception], max_bytes: int = MAX_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` (read with that bound, should it grow
    meanwhile), or ``error`` with one line: the one gate of every file an input names."""
    check_file(path, what, error, max_bytes)
    try:
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as f:
            data = f.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise error(f"{path}: cannot read {what}: more than {_size(max_bytes)}")
    return data


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def read_mapping(path: str, what: str, error: type[Exception], top: str = "a mapping") -> tuple[bytes, dict]:
    """The raw bytes and the parsed top-level mapping of a YAML file, or ``error`` with one line."""
    raw = read_file(path, what, error)
    try:
        data = yamlparse.load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or (str(exc).strip().splitlines() or ["invalid YAML"])[0]
        raise error(f"{path}: not valid YAML{where}: {redact(problem)}") from None
    except RecursionError:
        raise error(f"{path}: not valid YAML: nested too deeply") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected {top} at the top level, got {type(data).__name__}")
    return raw, data


#: pydantic's words for a type, as a profile's author says it
_PLAIN = ((re.compile(r"a valid dictionary or instance of \w+"), "a mapping (key: value)"),
          (re.compile(r"a valid dictionary"), "a mapping (key: value)"),
          (re.compile(r"a valid (?:tuple|list)"), "a list"),
          (re.compile(r"Extra inputs are not permitted"), "unknown field (a typo?)"))
#: how many errors one line lists before counting the rest
SHOWN_ERRORS = 8


def _plain(msg: str) -> str:
    for pattern, words in _PLAIN:
        msg = pattern.sub(words, msg)
    return msg


def one_line(path: str, exc: ValidationError, prefix: str = "") -> str:
    """Every validation error, on one line: ``<file>: <field.path>: <message>, got <value>; …``.
    Field paths leave out pydantic's own type names; the value is left out where it may be a
    secret: under a mistyped key (``pasword: hunter2``: the key is the mistake), under a
    secret-like key, or when redaction would mask it."""
    parts = []
    errors = exc.errors()
    for e in errors[:SHOWN_ERRORS]:
        loc = ".".join(str(p) for p in e["loc"] if not (isinstance(p, str) and (p[:1].isupper() or "[" in p)))
        where = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
        got = e.get("input")
        shown = ""
        if not (isinstance(got, (dict, list)) or got is None or e.get("type") == "extra_forbidden"
                or any(secret_name(str(p)) for p in e["loc"])):
            text = repr(got)
            shown = f", got {text}" if redact(text) == text else ", got a value that looks like a secret (not shown)"
        parts.append(f"{where}: {_plain(e['msg'])}{shown}")
    more = f"; and {len(errors) - SHOWN_ERRORS} more" if len(errors) > SHOWN_ERRORS else ""
    return f"{path}: {'; '.join(parts)}{more}"
