"""Whether Kyverno leaves a namespace alone (the article's first step before the GPU Operator:
its privileged operands must not be blocked or mutated by the platform's Kyverno policies).

A namespace is left alone by a policy rule when the rule's ``exclude`` names it (``namespaces``
patterns, or a ``namespaceSelector.matchLabels`` the namespace carries, in ``exclude.resources``
or any ``exclude.any[]`` entry), or the rule's ``match`` is restricted to other namespaces; by
all rules at once when Kyverno's ConfigMap ``resourceFilters`` filters it (``[*,<ns>,*]``).
"""
from __future__ import annotations

import fnmatch
import re


def _filters(block: dict | None) -> list[dict]:
    """The resource filters of a match/exclude block: legacy ``resources`` or ``any``/``all``."""
    if not block:
        return []
    out = [f.get("resources") or {} for f in (block.get("any") or [])]
    if block.get("all"):
        out.append(_merge_all([f.get("resources") or {} for f in block["all"]]))
    if block.get("resources"):
        out.append(block["resources"])
    return out


def _merge_all(resources: list[dict]) -> dict:
    # an `all` list excludes a namespace only if every entry selects it: keep the namespace
    # restriction when exactly one entry sets one (the common shape)
    with_ns = [r for r in resources if r.get("namespaces") or r.get("namespaceSelector")]
    return with_ns[0] if len(with_ns) == 1 and len(resources) == 1 else {}


def _selects(res: dict, namespace: str, ns_labels: dict[str, str]) -> bool:
    """Whether a resource filter selects objects in ``namespace`` (by name or labels)."""
    names = res.get("namespaces") or []
    if names and not any(fnmatch.fnmatchcase(namespace, p) for p in names):
        return False
    sel = (res.get("namespaceSelector") or {}).get("matchLabels") or {}
    if sel and not all(ns_labels.get(k) == v for k, v in sel.items()):
        return False
    return bool(names or sel)


def rule_leaves_alone(rule: dict, namespace: str, ns_labels: dict[str, str]) -> bool:
    if any(_selects(r, namespace, ns_labels) for r in _filters(rule.get("exclude"))):
        return True
    match = _filters(rule.get("match"))
    restricted = [r for r in match if r.get("namespaces") or r.get("namespaceSelector")]
    return bool(match) and len(restricted) == len(match) and not any(
        _selects(r, namespace, ns_labels) for r in restricted)


def filtered_globally(resource_filters: str, namespace: str) -> bool:
    """``resourceFilters`` entries are ``[kind,namespace,name]`` with wildcards."""
    for kind, ns, _name in re.findall(r"\[([^,\]]*),([^,\]]*),([^\]]*)\]", resource_filters or ""):
        if kind.strip() in ("*", "*/*") and fnmatch.fnmatchcase(namespace, ns.strip()):
            return True
    return False


def rules_not_excluding(policies, namespace: str, ns_labels: dict[str, str]) -> list[str]:
    """``<Kind>/<policy>: rule <name> (<action>)`` for every rule that still applies there."""
    out = []
    for p in policies:
        md, spec = p.get("metadata") or {}, p.get("spec") or {}
        if md.get("namespace") and md["namespace"] != namespace:
            continue
        action = spec.get("validationFailureAction") or "Audit"
        for rule in spec.get("rules") or []:
            if md.get("namespace") == namespace or not rule_leaves_alone(rule, namespace, ns_labels):
                kind = "Policy" if md.get("namespace") else "ClusterPolicy"
                out.append(f"{kind}/{md.get('name')}: rule {rule.get('name', '?')} ({action})")
    return out
