"""A changed file's second version parsed around the functions it shares with the first.

Stage 1 scans both versions of every changed file, and most of a changed file's functions are
byte-identical in the two (a release touches a few methods of a 10,000-line test class). Parsing
and analysing those again is half of a cold run's work. Here every such function of the second
version is masked by a placeholder, the rest parsed, and the first version's node put where the
placeholder is. The tree is the one a full parse gives, whatever the placement: a placeholder
only counts where the parser found it as a statement of its own, at the function's indentation,
spanning the function's lines; anywhere else (inside a string or brackets, an indented line
continuing the function) the file is parsed whole instead.
"""
from __future__ import annotations

import ast
import bisect
from dataclasses import dataclass, field, replace
from typing import Callable

from selector.inventory.model import HelperFunction, TestFunction

Entry = TestFunction | HelperFunction


@dataclass
class Unit:
    """A function the first version's scan analysed: its lines (decorators included) and result."""

    first: int
    last: int
    node: ast.stmt
    entry: Entry
    context: tuple  # what the entry was computed under (see ``_FileScanner._function``)

    @property
    def size(self) -> int:
        return self.last - self.first + 1


@dataclass
class ScannedVersion:
    """What one version's scan leaves for the next version of the same path."""

    lines: list[str]
    units: list[Unit] = field(default_factory=list)


@dataclass
class Placement:
    """A unit found in the second version: ``delta`` is its line there minus its line in the first."""

    unit: Unit
    delta: int


def source_lines(text: str) -> list[str]:
    """Lines as the tokenizer counts them (``str.splitlines`` also breaks at form feeds)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def parse_around(lines: list[str], earlier: ScannedVersion, parse: Callable[[str], ast.Module],
                 retries: int = 4) -> tuple[ast.Module, dict[int, Placement]] | None:
    """The tree of ``lines`` parsed with every function found unchanged from ``earlier`` masked,
    and node id -> placement of each re-used node; None when nothing is shared or the file must
    be parsed whole. ``parse`` raises SyntaxError or ValueError as ``ast.parse`` does.

    A placement the parser rejects (a decorator added above the function, a body that grew on
    lines the guess took for the next statement) is dropped and the rest parsed again.
    """
    placements = _find(lines, earlier)
    for _ in range(retries):
        if not placements:
            return None
        try:
            tree = parse(_masked(lines, placements))
        except (SyntaxError, ValueError) as exc:
            culprit = _placement_near(placements, getattr(exc, "lineno", None))
            if culprit is None:
                return None
            del placements[culprit]
            continue
        placed = substitute(tree, lines, placements)
        return (tree, placed) if placed is not None else None
    return None


def _masked(lines: list[str], placements: dict[int, Placement]) -> str:
    """The text with each placement's lines replaced by a placeholder statement ``()`` over the same lines."""
    masked = list(lines)
    for line, placement in placements.items():
        start, end = line - 1, line - 2 + placement.unit.size
        indent = _indent(lines[start])
        if start == end:
            masked[start] = indent + "()"
        else:  # newlines inside brackets do not end a statement: one placeholder spans every line
            masked[start] = indent + "("
            masked[start + 1:end] = [""] * (end - start - 1)
            masked[end] = ")"
    return "\n".join(masked)


def _placement_near(placements: dict[int, Placement], line: int | None) -> int | None:
    """The placement a syntax error at ``line`` is next to (on its lines, or one line off), if any."""
    if line is None:
        return None
    return next((start for start, placement in placements.items()
                 if start - 1 <= line <= start + placement.unit.size), None)


def substitute(tree: ast.Module, lines: list[str], placements: dict[int, Placement]) -> dict[int, Placement] | None:
    """Put each placement's node where its placeholder was parsed; node id -> placement, or None
    when a placeholder is missing or not where a function could stand (parse the file whole)."""
    placed: dict[int, Placement] = {}

    def visit(body: list[ast.stmt]) -> bool:
        for position, statement in enumerate(body):
            placement = placements.get(statement.lineno) if _is_placeholder(statement) else None
            if placement is not None:
                if statement.col_offset != len(_indent(lines[statement.lineno - 1])) or \
                        statement.end_lineno != statement.lineno + placement.unit.size - 1:
                    return False
                body[position] = placement.unit.node
                placed[id(placement.unit.node)] = placement
                continue
            for part in ("body", "orelse", "finalbody"):
                inner = getattr(statement, part, None)
                if isinstance(inner, list) and not visit(inner):
                    return False
            for handler in getattr(statement, "handlers", ()):
                if not visit(handler.body):
                    return False
            for case in getattr(statement, "cases", ()):
                if not visit(case.body):
                    return False
        return True

    if not visit(tree.body) or len(placed) != len(placements):
        return None
    return placed


def shifted(entry: Entry, delta: int) -> Entry:
    """``entry`` moved by ``delta`` lines (a copy: the first version's result keeps its lines)."""
    return replace(entry, lineno=entry.lineno + delta, end_lineno=entry.end_lineno + delta)


def _is_placeholder(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Tuple) and not statement.value.elts


def _stands_alone(lines: list[str], start: int, end: int, first: str) -> bool:
    """Whether the text at ``start:end`` looks like a whole function, not one whose decorators or
    last lines changed: no decorator right above, no deeper-indented line right after. A guess
    that saves a parse of the whole file; ``substitute`` is what makes placements exact."""
    before = next((line for line in reversed(lines[max(0, start - 20):start]) if _code(line)), "")
    after = next((line for line in lines[end:end + 20] if _code(line)), "")
    return not before.lstrip().startswith("@") and len(_indent(after)) <= len(_indent(first))


def _indent(line: str) -> str:
    """A line's leading whitespace, as the tokenizer counts indentation."""
    return line[:len(line) - len(line.lstrip(" \t\f"))]


def _code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _find(lines: list[str], earlier: ScannedVersion) -> dict[int, Placement]:
    """Where each unit's text stands in ``lines`` (1-based first line -> placement), without overlaps.

    Units are looked for in order after the previous one's place (the usual case: code kept in
    order), then anywhere free; which of two equal texts a unit takes does not matter, since
    equal texts parse to equal nodes and the entry is moved to where the text stands.
    """
    wanted: dict[str, list[int]] = {}
    for unit in earlier.units:
        wanted.setdefault(earlier.lines[unit.first - 1], [])
    for number, text in enumerate(lines):
        starts = wanted.get(text)
        if starts is not None:
            starts.append(number)
    taken = bytearray(len(lines))
    placements: dict[int, Placement] = {}
    cursor = 0
    for unit in earlier.units:
        starts = wanted[earlier.lines[unit.first - 1]]
        if not starts:
            continue
        size = unit.size
        body = earlier.lines[unit.first - 1:unit.last]
        after = bisect.bisect_left(starts, cursor)
        for start in starts[after:] + starts[:after]:
            if lines[start:start + size] == body and 1 not in taken[start:start + size] \
                    and _stands_alone(lines, start, start + size, body[0]):
                taken[start:start + size] = b"\1" * size
                placements[start + 1] = Placement(unit, start + 1 - unit.first)
                cursor = start + size
                break
    return placements
