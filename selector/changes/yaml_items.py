"""Two versions of a YAML file that is one top-level block sequence, compared item by item.

native_functions.yaml (15k lines) and derivatives.yaml are such files, and a release edits a few
hundred of their thousands of entries. Parsing both versions whole cost stage 1 seconds; here
the items whose text is the same on both sides are matched first and only the others are parsed.
Items are cut at each line that starts with ``- `` in column 0; a file of another shape (a
top-level mapping, a directive, an alias reaching into another item) is parsed whole instead.
"""
from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from typing import Any

import yaml

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml


class YamlItemError(ValueError):
    """A differing item that does not parse: ``args`` are the message (naming the line in the
    whole file) and the side ("old" or "new")."""


class _NotItemWise(Exception):
    """An item that only parses with the rest of its file (an alias to an anchor elsewhere)."""


@dataclass(frozen=True)
class Item:
    line: int  # where the item starts in its file (1-based)
    text: str


@dataclass
class ItemDiff:
    """The items only one side has, parsed, per run of differing items (``runs``: old, new)."""

    runs: list[tuple[list[tuple[int, Any]], list[tuple[int, Any]]]]

    @property
    def removed(self) -> list[tuple[int, Any]]:
        return [item for old, _ in self.runs for item in old]

    @property
    def added(self) -> list[tuple[int, Any]]:
        return [item for _, new in self.runs for item in new]


def item_starts(text: str | None) -> list[int]:
    """The lines where a block sequence's top-level items start (``- `` in column 0), of any file."""
    return [number for number, line in enumerate((text or "").splitlines(), 1) if line.startswith("- ")]


def top_level_items(text: str) -> list[Item] | None:
    """The file's top-level sequence items, or None when the file is not one plain block sequence."""
    lines = text.splitlines(keepends=True)
    starts: list[int] = []
    for index, line in enumerate(lines):
        if line.startswith("- ") or line.rstrip("\r\n") == "-":
            starts.append(index)
        elif line[:1] not in ("", " ", "\t", "#", "\n", "\r"):  # anything else in column 0: not our shape
            return None
    if not starts:
        return None
    return [Item(line=start + 1, text="".join(lines[start:end]))
            for start, end in zip(starts, starts[1:] + [len(lines)])]


@functools.lru_cache(maxsize=4)  # stage 1 asks for the entries that changed and whether the data did
def diff_items(before: str, after: str) -> ItemDiff | None:
    """The items that differ between two versions, each side parsed only there; None when either
    side is not one plain block sequence (the caller parses it whole). Raises YamlItemError, naming
    the side and line, when a differing item does not parse."""
    old, new = top_level_items(before), top_level_items(after)
    if old is None or new is None:
        return None
    matcher = difflib.SequenceMatcher(None, [i.text for i in old], [i.text for i in new], autojunk=False)
    runs = []
    try:
        for tag, a_lo, a_hi, b_lo, b_hi in matcher.get_opcodes():
            if tag != "equal":
                runs.append((_parse(old[a_lo:a_hi], "old"), _parse(new[b_lo:b_hi], "new")))
    except _NotItemWise:
        return None
    return ItemDiff(runs)


def _parse(items: list[Item], side: str) -> list[tuple[int, Any]]:
    """A run of items parsed in one load (a release changes thousands of entries); item by item
    only to name the one that does not parse."""
    try:
        data = yaml.load("".join(item.text for item in items), Loader=LOADER)
    except yaml.YAMLError:
        data = None
    if isinstance(data, list) and len(data) == len(items):
        return [(item.line, entry) for item, entry in zip(items, data)]
    out = []
    for item in items:
        try:
            data = yaml.load(item.text, Loader=LOADER)
        except yaml.YAMLError as exc:
            if "undefined alias" in str(exc):
                raise _NotItemWise from exc
            mark = getattr(exc, "problem_mark", None)
            where = f"line {item.line + mark.line}: " if mark else ""
            raise YamlItemError(f"{where}{getattr(exc, 'problem', None) or exc}", side) from exc
        if not isinstance(data, list) or len(data) != 1:
            raise YamlItemError(f"line {item.line}: expected one sequence item, found {type(data).__name__}", side)
        out.append((item.line, data[0]))
    return out
