"""Reading the suite's YAML inputs (profile, waivers, kubeconfig): every mistake becomes one line
naming the file, the field path and what was expected.

Stricter than ``yaml.safe_load``: a duplicate key (the later value would silently win), an
impossible date (``2026-13-45``), nesting deeper than MAX_DEPTH and aliases that expand to more
than MAX_NODES nodes (an alias bomb, a recursive alias) are errors with their line; only a
regular file of sane size is read (not a FIFO that never ends, not ``/dev/zero``): ``read_file``
is the one gate of every file an input names (profile, waivers, kubeconfig, baseline, ssh files)."""
from __future__ import annotations

import os
import re
import stat

import yaml
from pydantic import ValidationError

from gpuconform.redact import redact, secret_name

MAX_BYTES = 4 << 20
#: mappings and lists inside each other; profiles, waivers and kubeconfigs need fewer than 10
MAX_DEPTH = 64
#: nodes of a document with every alias expanded (what validation and printing walk)
MAX_NODES = 200_000


class _StrictLoader(yaml.SafeLoader):
    _depth = 0

    def compose_node(self, parent, index):
        """A node, refused deeper than MAX_DEPTH (PyYAML composes by recursion: a deep enough
        document would end in RecursionError)."""
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested more than {MAX_DEPTH} levels deep",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def compose_document(self):
        node = super().compose_document()
        _bounded(node)
        return node

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


def _bounded(root) -> None:
    """Refuse a composed document whose aliases expand past MAX_NODES nodes or MAX_DEPTH levels,
    or refer to themselves: counted once per distinct node, without expanding anything."""
    size: dict[int, tuple[int, int]] = {}  # id(node) -> (expanded nodes, depth)
    stack, open_ = [(root, False)], set()
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        children = [n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode) else \
            list(node.value) if isinstance(node, yaml.SequenceNode) else []
        if not done:
            if id(node) in open_:
                raise yaml.composer.ComposerError(None, None, "an alias that contains itself", node.start_mark)
            open_.add(id(node))
            stack.append((node, True))
            stack += [(c, False) for c in children if id(c) not in size]
            continue
        open_.discard(id(node))
        nodes = 1 + sum(size[id(c)][0] for c in children)
        depth = 1 + max((size[id(c)][1] for c in children), default=0)
        if nodes > MAX_NODES or depth > MAX_DEPTH:
            what = f"more than {MAX_NODES} nodes" if nodes > MAX_NODES else f"more than {MAX_DEPTH} levels"
            raise yaml.composer.ComposerError(None, None, f"aliases expand to {what}", node.start_mark)
        size[id(node)] = (nodes, depth)


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


def _load(raw: bytes | str):
    return yaml.load(raw, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass


def parse_text(text: str):
    """``text`` read as YAML under the same bounds, None when it is not YAML (redaction's try)."""
    try:
        return _load(text)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return None


def read_mapping(path: str, what: str, error: type[Exception], top: str = "a mapping") -> tuple[bytes, dict]:
    """The raw bytes and the parsed top-level mapping of a YAML file, or ``error`` with one line."""
    raw = read_file(path, what, error)
    try:
        data = _load(raw)
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
