"""Parse YAML keeping where every node starts, so validation errors can name file:line.

pydantic reports an error location as a path (``("files", 0, "entries", 2, "mode")``);
``LineIndex.line_of`` walks the composed YAML node tree along that path and returns the
line of the deepest node it reaches (the field itself, or its parent when it is missing).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import yaml

from testdefs.errors import Problem


@dataclass
class LineIndex:
    root: yaml.Node | None

    def line_of(self, loc: Sequence[str | int]) -> int | None:
        node = self.root
        if node is None:
            return None
        line = node.start_mark.line + 1
        for part in loc:
            child = _child(node, part)
            if child is None:
                break
            node = child
            line = node.start_mark.line + 1
        return line


def _child(node: yaml.Node, part: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value == str(part):
                return value
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return node.value[part]
    return None


@dataclass
class ParsedYaml:
    data: object
    lines: LineIndex
    problems: list[Problem] = field(default_factory=list)


def parse_yaml(text: str, filename: str) -> ParsedYaml:
    """Safe-load ``text``; syntax errors and duplicate keys come back as problems, not exceptions."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return ParsedYaml(None, LineIndex(None))
        problems = list(_duplicate_keys(node, filename, []))
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        if exc.context_mark and mark is not exc.context_mark and exc.context_mark.line + 1 != line:
            what += f" (the construct began on line {exc.context_mark.line + 1})"
        return ParsedYaml(None, LineIndex(None), [Problem(filename, line, "", f"not valid YAML: {what}")])
    except yaml.YAMLError as exc:
        return ParsedYaml(None, LineIndex(None), [Problem(filename, None, "", f"not valid YAML: {exc}")])
    finally:
        loader.dispose()
    return ParsedYaml(data, LineIndex(node), problems)


def _duplicate_keys(node: yaml.Node, filename: str, path: list[str | int]):
    """PyYAML keeps the last of two equal keys silently; a rules file must not lose the first."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                line = key.start_mark.line + 1
                if key.value in seen:
                    yield Problem(filename, line, format_loc([*path, key.value]),
                                  f"duplicate key (first given on line {seen[key.value]}); give each key once")
                else:
                    seen[key.value] = line
                yield from _duplicate_keys(value, filename, [*path, key.value])
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            yield from _duplicate_keys(item, filename, [*path, index])


def format_loc(loc: Sequence[str | int]) -> str:
    """``("files", 0, "mode")`` -> ``files[0].mode``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
