"""Load a YAML file into a pydantic model; any mistake becomes one ``path:line: problem`` error.

The simulator's data files (coverage tables, constants) are edited by hand, so a bad entry
must point at its line instead of producing a traceback from deep inside pydantic.
"""
from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import pydantic
import yaml

from spyre_device.errors import ConfigError

ModelT = TypeVar("ModelT", bound=pydantic.BaseModel)


class SimConfigError(ConfigError):
    """A simulator data file is unreadable or invalid; the message names file, line and field."""


def node_line(root: yaml.Node | None, loc: tuple) -> int | None:
    """1-based line of the YAML node reached by following ``loc`` (keys and list indices).

    Stops at the deepest node that exists, so an error about a missing key points at its parent.
    """
    node, line = root, None
    for key in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == str(key)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            node = None
    if node is not None:
        line = node.start_mark.line + 1
    return line


def read_yaml(path: str | Path) -> tuple[object, yaml.Node | None]:
    """Parse ``path`` once into plain data plus the node tree used for line numbers."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SimConfigError(f"{path}: cannot read file ({exc.strerror})") from None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=yaml.SafeLoader)  # noqa: S506 - SafeLoader
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise SimConfigError(f"{where}: invalid YAML ({exc.problem})") from None
    return data, root


def load_model(path: str | Path, model: type[ModelT]) -> tuple[ModelT, yaml.Node | None]:
    """Validate the YAML file at ``path`` against ``model``; errors name ``file:line`` and field."""
    data, root = read_yaml(path)
    if data is None:
        raise SimConfigError(f"{path}:1: file is empty (expected a mapping, see docs/simulator.md)")
    try:
        return model.model_validate(data), root
    except pydantic.ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        field = ".".join(str(p) for p in loc) or "<top level>"
        line = node_line(root, loc) or 1
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise SimConfigError(f"{path}:{line}: {field}: {err['msg']}{more}") from None
