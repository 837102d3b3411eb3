"""The profile's reference, made from its models: every field with its type, default and
description. ``python -m gpuconform profile --explain`` prints it; docs/profile-reference.md is
:func:`markdown` (a selftest keeps the file current)."""
from __future__ import annotations

import dataclasses
import json
import types
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

Section = type[BaseModel]


@dataclasses.dataclass(frozen=True)
class Row:
    path: str          # dotted, `[]` for a list item, `<key>` for a mapping key
    type: str
    default: str       # "required" when the field has none
    description: str
    section: bool      # a section of its own (its fields follow)


def _models_in(annotation: Any) -> list[Section]:
    """The models an annotation holds (X, X | None, tuple[X, ...], dict[str, X])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(json.dumps(a) for a in args)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        return " | ".join("null" if a is type(None) else _type_name(a) for a in args)
    if origin is tuple:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"mapping {_type_name(args[0])} → {_type_name(args[1])}"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    return {str: "string", int: "integer", float: "number", bool: "boolean"}.get(annotation, str(annotation))


def _default(field) -> str:
    if field.is_required():
        return "required"
    value = field.default_factory() if field.default is PydanticUndefined else field.default
    if isinstance(value, BaseModel):
        return "(section defaults)"
    value = value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    if isinstance(value, tuple):
        value = [v.model_dump(mode="json", exclude_defaults=True) if isinstance(v, BaseModel) else v for v in value]
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def rows(model: Section, prefix: str = "") -> list[Row]:
    """Every field of ``model`` and of the sections below it, depth first."""
    out = []
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        inner = [m for m in _models_in(field.annotation) if not hasattr(m, "partial_of")]
        out.append(Row(path, _type_name(field.annotation), _default(field), field.description or "", bool(inner)))
        for sub in inner:
            origin = typing.get_origin(field.annotation)
            suffix = "[]" if origin is tuple or any(typing.get_origin(a) is tuple
                                                     for a in typing.get_args(field.annotation)) else \
                ".<key>" if origin is dict else ""
            out += rows(sub, f"{path}{suffix}.")
    return out


def explain(model: Section, values: BaseModel | None = None) -> str:
    """Plain text for a terminal: each field, its type and default, its description; with
    ``values`` (a loaded profile), what that profile sets where it differs from the default."""
    lines = []
    for row in rows(model):
        depth = row.path.count(".")
        head = "  " * depth + row.path.rsplit(".", 1)[-1]
        if row.section:
            lines.append(f"{head}: {row.description}")
            continue
        lines.append(f"{head}  ({row.type}; default {row.default})")
        if row.description:
            lines.append("  " * depth + f"    {row.description}")
        if values is not None:
            here = _value_at(values, row.path)
            if here is not _ABSENT and _as_text(here) != row.default:
                lines.append("  " * depth + f"    this profile: {_as_text(here)}")
    return "\n".join(lines) + "\n"


_ABSENT = object()


def _value_at(values: Any, path: str) -> Any:
    for part in path.split("."):
        if part.endswith("[]") or part == "<key>" or values is None:
            return _ABSENT
        values = getattr(values, part, _ABSENT)
        if values is _ABSENT:
            return _ABSENT
    return values


def _as_text(value: Any) -> str:
    if isinstance(value, BaseModel):
        return "(section defaults)"
    if isinstance(value, tuple):
        value = [v.model_dump(mode="json", exclude_defaults=True) if isinstance(v, BaseModel) else v for v in value]
    return json.dumps(value, default=str)


def markdown(model: Section) -> str:
    """docs/profile-reference.md."""
    lines = ["# Profile reference", "",
             "Generated from the profile's models (`gpuconform/profile/`) by "
             "`python -m gpuconform profile --markdown`; do not edit by hand. "
             "`python -m gpuconform profile --explain [PROFILE]` prints the same in a terminal, "
             "with what a profile sets.", "",
             "| field | type | default | description |", "|---|---|---|---|"]
    for row in rows(model):
        cells = [f"`{row.path}`", row.type, "" if row.section else f"`{row.default}`", row.description]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines) + "\n"
