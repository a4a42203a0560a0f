"""pydantic validation errors as ``Problem`` lines: file:line, the field, and what was expected."""
from __future__ import annotations

import types
import typing
from collections.abc import Sequence

from pydantic import BaseModel, ValidationError

from testdefs.errors import Problem, format_loc
from testdefs.safe_yaml import LineIndex


def validation_problems(exc: ValidationError, name: str, lines: LineIndex, root: type[BaseModel],
                        prefix: tuple[str | int, ...] = ()) -> list[Problem]:
    """``prefix`` is where the validated part sits in the document (a part validated on its own)."""
    return [_problem(name, lines, err, root, prefix) for err in exc.errors()]


def _problem(name: str, lines: LineIndex, err: dict, root: type[BaseModel], prefix: tuple) -> Problem:
    loc = prefix + tuple(part for part in err["loc"] if not _is_union_tag(part))
    kind = err["type"]
    message = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "extra_forbidden":
        allowed = _fields_at(root, loc[:-1])
        message = f"unknown field {loc[-1]!r}" + (f"; expected one of: {', '.join(allowed)}" if allowed else "")
    elif kind == "missing":
        message = f"missing required field {loc[-1]!r}"
    elif "input" in err and isinstance(err["input"], (str, int, float, bool)) and kind not in ("value_error",):
        message += f" (got {err['input']!r})"
    return Problem(name, lines.line_of(loc), format_loc(loc), message)


def _is_union_tag(part: object) -> bool:
    """pydantic names the union member it tried (``function-after[...]``); it is no YAML key."""
    return isinstance(part, str) and ("[" in part or part in ("str", "int", "float", "bool", "list", "dict"))


def _fields_at(root: type[BaseModel], loc: Sequence[str | int]) -> list[str]:
    """YAML keys allowed at a location, found by walking the models' annotations."""
    model: type[BaseModel] | None = root
    for part in loc:
        if model is None:
            return []
        if isinstance(part, int):
            continue
        field = next((f for key, f in model.model_fields.items() if (f.alias or key) == part), None)
        model = _model_in(field.annotation) if field else None
    if model is None:
        return []
    return [f.alias or key for key, f in model.model_fields.items()]


def _model_in(annotation) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_in(typing.get_args(annotation)[0])
    if origin in (list, typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None
