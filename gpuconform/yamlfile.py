"""Reading the suite's YAML inputs (profile, waivers): every mistake becomes one line naming
the file, the field path and what was expected."""
from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError


def read_mapping(path: str, what: str, error: type[Exception], top: str = "a mapping") -> tuple[bytes, dict]:
    """The raw bytes and the parsed top-level mapping of a YAML file, or ``error`` with one line."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise error(f"{path}: not valid YAML{where}: {getattr(exc, 'problem', None) or 'invalid YAML'}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected {top} at the top level, got {type(data).__name__}")
    return raw, data


def one_line(path: str, exc: ValidationError, prefix: str = "") -> str:
    """The first validation error as ``<file>: <field.path>: <message>, got <value>``."""
    e = exc.errors()[0]
    loc = ".".join(str(p) for p in e["loc"])
    where = f"{prefix}.{loc}" if prefix and loc else (prefix or loc)
    got = e.get("input")
    shown = "" if isinstance(got, (dict, list)) or got is None else f", got {got!r}"
    more = f" (and {len(exc.errors()) - 1} more)" if len(exc.errors()) > 1 else ""
    return f"{path}: {where}: {e['msg']}{shown}{more}"
