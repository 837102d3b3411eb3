"""YAML parsed stricter than ``yaml.safe_load``, for every YAML the suite reads (profile, waivers,
kubeconfig; redaction's try at a text): a duplicate key (the later value would silently win), an
impossible date (``2026-13-45``), nesting deeper than MAX_DEPTH and aliases that expand to more
than MAX_NODES nodes (an alias bomb, a recursive alias) are errors with their line. Below
redaction (which parses a text to find its secrets) and :mod:`gpuconform.yamlfile` (which reads
files and masks its error lines through redaction)."""
from __future__ import annotations

import yaml

#: mappings and lists inside each other; profiles, waivers and kubeconfigs need fewer than 10
MAX_DEPTH = 64
#: nodes of a document with every alias expanded (what validation and printing walk)
MAX_NODES = 200_000


#: libyaml's parser where PyYAML was built with it (twenty times faster on a profile: the run's
#: start, issue #27), else PyYAML's own. Either composes by recursion, so the depth is checked on
#: the events first (:func:`_depth_checked`), which both parsers make without recursing.
_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
#: libyaml's scanner error for nesting past its own limit (1,000 levels in libyaml 0.2.5)
LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"


class _StrictLoader(_BASE):
    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
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


def _too_deep(mark) -> yaml.composer.ComposerError:
    return yaml.composer.ComposerError(None, None, f"nested more than {MAX_DEPTH} levels deep", mark)


def _depth_checked(raw: bytes | str) -> None:
    """Refuse a document with a node nested deeper than MAX_DEPTH (the top node is level 1)."""
    depth = 0
    try:
        for event in yaml.parse(raw, Loader=_BASE):
            if isinstance(event, _CLOSE):
                depth -= 1
            elif isinstance(event, (*_OPEN, yaml.ScalarEvent, yaml.AliasEvent)):
                if depth + 1 > MAX_DEPTH:
                    raise _too_deep(event.start_mark)
                depth += isinstance(event, _OPEN)
    except yaml.scanner.ScannerError as exc:
        if exc.problem != LIBYAML_TOO_DEEP:
            raise
        # libyaml's scanner looks ahead in a flow collection and stops at its own limit, far past ours
        raise _too_deep(exc.problem_mark) from None


def load(raw: bytes | str):
    _depth_checked(raw)
    return yaml.load(raw, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass


def parse_text(text: str):
    """``text`` read as YAML under the same bounds, None when it is not YAML (redaction's try)."""
    try:
        return load(text)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return None
