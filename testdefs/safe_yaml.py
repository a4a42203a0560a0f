"""Bounded, safe YAML loading for every rules file and torch-spyre config testdefs reads.

A rules file is input from people and from other repositories, so reading one must neither run
code nor take unbounded time or memory. This module builds the data straight from the parser's
event stream (libyaml's C parser when PyYAML has it, else PyYAML's own) instead of composing a
node tree first, which keeps memory near the size of the data itself, and it counts as it goes:

- the file size is checked before reading (``Limits.max_bytes``);
- every node, aliases expanded, counts towards ``Limits.max_nodes``: an alias bomb (a few lines
  whose anchors refer to each other) stops at the limit instead of expanding for minutes;
- aliases (``Limits.max_aliases``) and nesting depth (``Limits.max_depth``) are bounded;
- duplicate keys are found while each mapping is built (each node is visited once, so shared
  nodes are not walked again and the check is linear);
- only YAML's standard scalar tags are constructed (as ``yaml.safe_load`` would).

Every problem comes back as a ``Problem`` naming file:line, never as an exception, and
``LineIndex.line_of`` maps a validation error's location (``("files", 0, "mode")``) to its line.
"""
from __future__ import annotations

import os
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testdefs.errors import Problem, format_loc

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when PyYAML was built with it
LIBYAML = Loader is not yaml.SafeLoader

_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG = "tag:yaml.org,2002:str"
_IMPLICIT = yaml.resolver.Resolver.yaml_implicit_resolvers  # first character -> [(tag, regexp)]


@dataclass(frozen=True)
class Limits:
    """How much a YAML file may ask of us. Defaults fit rules files with room to spare (a 20 MB
    rules file is about 1.5 million nodes)."""

    max_bytes: int = int(os.environ.get("RELAY_TESTDEFS_MAX_YAML_BYTES", 64 * 1024 * 1024))
    max_nodes: int = 10_000_000  # after alias expansion
    max_aliases: int = 10_000
    max_depth: int = 200


DEFAULT_LIMITS = Limits()


class _Stop(Exception):
    """Raised inside the builder to abandon a file at its first fatal problem."""

    def __init__(self, problem: Problem) -> None:
        self.problem = problem


class _Where:
    """Lines of one mapping or sequence: where it starts, where each item's value starts, and the
    same for the items that are containers. Kept apart from the data (compactly: line numbers in
    an array), so the data can be dropped once validated while errors and refs still find lines."""

    __slots__ = ("line", "keys", "lines", "children")

    def __init__(self, line: int, mapping: bool) -> None:
        self.line = line
        self.keys: list | None = [] if mapping else None
        self.lines = array("l")
        self.children: list[_Where | None] | None = None  # made when the first container item arrives

    def add(self, key: object, line: int, child: _Where | None) -> None:
        if self.keys is not None and key in self.keys:  # a duplicate key (reported): the later value wins
            index = self.keys.index(key)
            self.lines[index] = line
            self._set_child(index, child)
            return
        if self.keys is not None:
            self.keys.append(key)
        self.lines.append(line)
        self._set_child(len(self.lines) - 1, child)

    def _set_child(self, index: int, child: _Where | None) -> None:
        if child is None and self.children is None:
            return
        if self.children is None:
            self.children = [None] * len(self.lines)
        self.children.extend([None] * (len(self.lines) - len(self.children)))
        self.children[index] = child

    def child(self, index: int) -> _Where | None:
        return self.children[index] if self.children is not None and index < len(self.children) else None

    def index(self, part: str | int) -> int | None:
        if self.keys is None:
            return part if isinstance(part, int) and 0 <= part < len(self.lines) else None
        for key in (part, str(part)):
            if key in self.keys:
                return self.keys.index(key)
        return None


class LineIndex:
    """file:line for a location in loaded data (pydantic's ``loc``), from lines kept while loading."""

    def __init__(self, root: _Where | None = None, root_line: int | None = None,
                 by_object: dict[int, _Where] | None = None) -> None:
        self.root = root
        self.root_line = root_line
        self.by_object = by_object or {}  # id(container) -> its lines, when asked for (the importer)

    def line_of(self, loc: Sequence[str | int]) -> int | None:
        """The line of the deepest part of ``loc`` that exists (the field, or its parent when missing)."""
        where, line = self.root, self.root_line
        for part in loc:
            index = where.index(part) if where is not None else None
            if index is None:
                break
            line, where = where.lines[index], where.child(index)
        return line

    def lines_under(self, loc: Sequence[str | int]) -> Sequence[int]:
        """The lines of the items of the sequence at ``loc`` (empty when it is not a loaded sequence)."""
        where = self.root
        for part in loc:
            index = where.index(part) if where is not None else None
            if index is None:
                return ()
            where = where.child(index)
        return where.lines if where is not None and where.keys is None else ()

    def item_lines(self, container: object) -> dict | list | None:
        """The value lines of a loaded mapping (key -> line) or sequence (index -> line)."""
        where = self.by_object.get(id(container))
        if where is None:
            return None
        if where.keys is None:
            return list(where.lines)
        return dict(zip(where.keys, where.lines))

    def start_line(self, container: object) -> int | None:
        where = self.by_object.get(id(container))
        return where.line if where else None


@dataclass
class ParsedYaml:
    data: object
    lines: LineIndex
    problems: list[Problem] = field(default_factory=list)


def read_file(path: Path, name: str, limits: Limits = DEFAULT_LIMITS) -> tuple[str | None, Problem | None]:
    """A file's text, or the problem that keeps us from using it (missing, too large, not UTF-8)."""
    try:
        size = path.stat().st_size
        if size > limits.max_bytes:
            return None, Problem(name, None, "", f"file is {size / 1e6:.1f} MB; the limit is "
                                 f"{limits.max_bytes / 1e6:.0f} MB (RELAY_TESTDEFS_MAX_YAML_BYTES)")
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, Problem(name, None, "", "file not found")
    except IsADirectoryError:
        return None, Problem(name, None, "", "is a directory, not a YAML file")
    except OSError as exc:
        return None, Problem(name, None, "", f"cannot read: {exc.strerror or exc}")
    return decode(raw, name)


def decode(raw: bytes, name: str) -> tuple[str | None, Problem | None]:
    try:
        return raw.decode("utf-8").removeprefix("\ufeff"), None
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        return None, Problem(name, line, "", f"not UTF-8: byte 0x{raw[exc.start]:02x} at column {column}; "
                             "save the file as UTF-8")


def load_file(path: Path, name: str, limits: Limits = DEFAULT_LIMITS) -> ParsedYaml:
    text, problem = read_file(path, name, limits)
    if problem is not None:
        return ParsedYaml(None, LineIndex(), [problem])
    return parse_yaml(text, name, limits)


def parse_yaml(text: str, filename: str, limits: Limits = DEFAULT_LIMITS, *, index_objects: bool = False) -> ParsedYaml:
    """Safe-load ``text``; syntax errors, limits and duplicate keys come back as problems.

    ``index_objects`` also keeps the lines of each loaded container by the container's identity
    (``LineIndex.item_lines``), for callers that walk the data itself (the torch-spyre importer).
    """
    if len(text) > limits.max_bytes:
        return ParsedYaml(None, LineIndex(), [Problem(filename, None, "", f"text is {len(text) / 1e6:.1f} MB; "
                                                      f"the limit is {limits.max_bytes / 1e6:.0f} MB")])
    builder = _Builder(filename, limits, index_objects)
    loader = Loader(text)
    try:
        while loader.check_event():
            builder.feed(loader.get_event())
    except _Stop as stop:
        return ParsedYaml(None, LineIndex(), [stop.problem])
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        if exc.context_mark and mark is not exc.context_mark and exc.context_mark.line + 1 != line:
            what += f" (the construct began on line {exc.context_mark.line + 1})"
        return ParsedYaml(None, LineIndex(), [Problem(filename, line, "", f"not valid YAML: {what}")])
    except yaml.YAMLError as exc:
        return ParsedYaml(None, LineIndex(), [Problem(filename, None, "", f"not valid YAML: {exc}")])
    finally:
        loader.dispose()
    return ParsedYaml(builder.root, LineIndex(builder.root_where, builder.root_line, builder.by_object),
                      builder.problems)


@dataclass
class _Frame:
    container: dict | list
    where: _Where
    anchor: str | None
    path: list[str | int]
    size: int = 1
    key: object = None
    key_line: int = 0
    has_key: bool = False
    first_line: dict = field(default_factory=dict)  # mapping: key -> line it was first given
    merges: list = field(default_factory=list)


class _Builder:
    """Turns parser events into Python data, enforcing the limits as it goes."""

    def __init__(self, filename: str, limits: Limits, index_objects: bool) -> None:
        self.filename = filename
        self.limits = limits
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[object, int]] = {}  # anchor -> (value, expanded node count)
        self.open_anchors: set[str] = set()
        self.nodes = 0
        self.aliases = 0
        self.documents = 0
        self.root: object = None
        self.root_line: int | None = None
        self.root_where: _Where | None = None
        self.by_object: dict[int, _Where] | None = {} if index_objects else None
        self.wheres: dict[int, _Where] = {}  # id(container) -> lines, for anchors reused by aliases
        self.problems: list[Problem] = []
        self.resolver = yaml.resolver.Resolver()
        self.constructor = yaml.constructor.SafeConstructor()

    def stop(self, line: int | None, message: str) -> None:
        raise _Stop(Problem(self.filename, line, format_loc(self._path()), message))

    def _path(self) -> list[str | int]:
        if not self.stack:
            return []
        top = self.stack[-1]
        path = list(top.path)
        if isinstance(top.container, dict) and top.has_key:
            path.append(str(top.key))
        elif isinstance(top.container, list):
            path.append(len(top.container))
        return path

    def _count(self, size: int, line: int) -> None:
        self.nodes += size
        if self.nodes > self.limits.max_nodes:
            self.stop(line, f"the document expands to more than {self.limits.max_nodes:,} nodes "
                            "(aliases included); refusing to load it (an alias bomb?)")

    def feed(self, event: yaml.Event) -> None:
        line = event.start_mark.line + 1 if event.start_mark else None
        if type(event) is yaml.ScalarEvent:  # the common case first
            value = self._scalar(event, line)
            self._count(1, line)
            if event.anchor:
                self.anchors[event.anchor] = (value, 1)
            self._deliver(value, line, 1, event)
        elif isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                self.stop(line, "more than one YAML document (a second '---'); give one document per file")
        elif isinstance(event, yaml.ScalarEvent):
            value = self._scalar(event, line)
            self._count(1, line)
            if event.anchor:
                self.anchors[event.anchor] = (value, 1)
            self._deliver(value, line, 1, event)
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            mapping = isinstance(event, yaml.MappingStartEvent)
            tag = event.tag
            if tag not in (None, "!", _MAP_TAG if mapping else _SEQ_TAG):
                self.stop(line, f"tag {tag} is not allowed here; plain mappings and lists only")
            if len(self.stack) >= self.limits.max_depth:
                self.stop(line, f"nested more than {self.limits.max_depth} levels deep")
            self._count(1, line)
            container: dict | list = {} if mapping else []
            where = _Where(line, mapping)
            if self.by_object is not None:
                self.by_object[id(container)] = where
            if event.anchor:
                self.open_anchors.add(event.anchor)
            self.stack.append(_Frame(container, where, event.anchor, self._path()))
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            frame = self.stack.pop()
            if isinstance(frame.container, dict):
                self._apply_merges(frame)
            if frame.anchor:
                self.open_anchors.discard(frame.anchor)
                self.anchors[frame.anchor] = (frame.container, frame.size)
                self.wheres[id(frame.container)] = frame.where
            self._deliver(frame.container, frame.where.line, frame.size, None, frame.where)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor in self.open_anchors:
                self.stop(line, f"alias *{event.anchor} refers to a node that contains it (a recursive alias)")
            if event.anchor not in self.anchors:
                self.stop(line, f"alias *{event.anchor} names no anchor defined before it")
            self.aliases += 1
            if self.aliases > self.limits.max_aliases:
                self.stop(line, f"more than {self.limits.max_aliases:,} aliases (*name); refusing to load it")
            value, size = self.anchors[event.anchor]
            self._count(size, line)
            self._deliver(value, line, size, None, self.wheres.get(id(value)))

    def _scalar(self, event: yaml.ScalarEvent, line: int | None) -> object:
        tag = event.tag
        if tag is None or tag == "!":
            tag = self._resolve(event.value, event.implicit[0])
            if tag == _STR_TAG:  # most values: no node, no constructor
                return event.value
            if tag == _MERGE_TAG:  # ``<<``: merges when it is a key (see _deliver)
                return _MergeKey
        construct = self.constructor.yaml_constructors.get(tag)
        if construct is None or tag.startswith("tag:yaml.org,2002:python/"):
            self.stop(line, f"tag {tag} is not allowed; only plain YAML values")
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            return construct(self.constructor, node)
        except (yaml.YAMLError, ValueError, TypeError) as exc:
            self.stop(line, f"cannot read the value {event.value!r} as {tag.rsplit(':', 1)[-1]}: {exc}")

    def _resolve(self, value: str, plain: bool) -> str:
        """The implicit tag of a scalar, as PyYAML's resolver finds it (without its path resolvers)."""
        if plain:
            resolvers = _IMPLICIT.get(value[0] if value else "", ())
            for tag, regexp in (*resolvers, *_IMPLICIT.get(None, ())):
                if regexp.match(value):
                    return tag
        return _STR_TAG

    def _deliver(self, value: object, line: int | None, size: int, event: yaml.ScalarEvent | None,
                 where: _Where | None = None) -> None:
        if not self.stack:
            self.root, self.root_line, self.root_where = value, line, where
            return
        frame = self.stack[-1]
        frame.size += size
        if value is _MergeKey and (frame.has_key or isinstance(frame.container, list)):
            value = "<<"  # not in key position: just the text
        if isinstance(frame.container, list):
            frame.container.append(value)
            frame.where.add(None, line, where)
            return
        if not frame.has_key:
            if isinstance(value, (dict, list)):
                self.stop(line, "a mapping key must be a plain value, not a list or mapping")
            frame.key, frame.key_line, frame.has_key = value, line, True
            if value is not _MergeKey and value in frame.first_line:
                self.problems.append(Problem(
                    self.filename, line, format_loc([*frame.path, str(value)]),
                    f"duplicate key (first given on line {frame.first_line[value]}); give each key once"))
            elif value is not _MergeKey:
                frame.first_line[value] = line
            return
        key = frame.key
        frame.has_key = False
        if key is _MergeKey:
            frame.merges.append((value, line, where))
            return
        frame.container[key] = value
        frame.where.add(key, line, where)

    def _apply_merges(self, frame: _Frame) -> None:
        """``<<: *base`` (or a list of them): keys not given explicitly come from the merged mappings."""
        for value, line, value_where in frame.merges:
            sources = value if isinstance(value, list) else [value]
            source_wheres = ([value_where.child(i) for i in range(len(value))] if isinstance(value, list) and value_where
                             else [value_where])
            for source, source_where in zip(sources, source_wheres):
                if not isinstance(source, dict):
                    self.stop(line, "'<<' merges mappings only (an alias of a mapping, or a list of them)")
                for key, item in source.items():
                    if key not in frame.container:
                        frame.container[key] = item
                        index = source_where.index(key) if source_where else None
                        frame.where.add(key, source_where.lines[index] if index is not None else line,
                                        source_where.child(index) if index is not None else None)


class _MergeKey:
    """Marker for YAML's merge key ``<<`` while a mapping is being built."""
