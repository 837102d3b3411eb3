"""Reading the suite's YAML inputs (profile, waivers, kubeconfig): every mistake becomes one line
naming the file, the field path and what was expected.

Stricter than ``yaml.safe_load``: a duplicate key (the later value would silently win) and an
impossible date (``2026-13-45``) are errors with their line; only a regular file of sane size is
read (not a FIFO that never ends, not ``/dev/zero``)."""
from __future__ import annotations

import os
import stat

import yaml
from pydantic import ValidationError

MAX_BYTES = 4 << 20


class _StrictLoader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:  # an unhashable key: SafeLoader reports it
                    break
                if duplicate:
                    raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}",
                                                            key_node.start_mark)
                seen.add(key)
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_timestamp(self, node):
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError as exc:
            raise yaml.constructor.ConstructorError(None, None, f"{node.value!r} is not a date ({exc})",
                                                    node.start_mark) from None


_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _StrictLoader.construct_yaml_timestamp)


def read_file(path: str, what: str, error: type[Exception]) -> bytes:
    """The bytes of a regular file of at most MAX_BYTES, or ``error`` with one line."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{path}: cannot read {what}: it is a directory")
        if not stat.S_ISREG(st.st_mode):
            kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if \
                stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file"
            raise error(f"{path}: cannot read {what}: it is {kind}, not a regular file")
        if st.st_size > MAX_BYTES:
            raise error(f"{path}: cannot read {what}: {st.st_size} bytes, more than {MAX_BYTES >> 20} MiB")
        with open(path, "rb") as f:
            return f.read(MAX_BYTES + 1)
    except OSError as exc:
        raise error(f"{path}: cannot read {what}: {exc.strerror or exc}") from None


def read_mapping(path: str, what: str, error: type[Exception], top: str = "a mapping") -> tuple[bytes, dict]:
    """The raw bytes and the parsed top-level mapping of a YAML file, or ``error`` with one line."""
    raw = read_file(path, what, error)
    try:
        data = yaml.load(raw, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or (str(exc).strip().splitlines() or ["invalid YAML"])[0]
        raise error(f"{path}: not valid YAML{where}: {problem}") from None
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
