"""Test files that read a changed data file by its path (``yaml.safe_load(TREE / "…/native_functions.yaml")``).

Imports show which Python modules a test runs; a data file (YAML, JSON, text) a test opens has
no import to follow, only its path written in the test file. A test file naming the path of a
changed data file reaches it: the tests reading the module-level names or helpers whose lines
name the path (``NATIVE_OPS = _declared("…/native_functions.yaml")`` read by
``@parametrize("op_name", NATIVE_OPS)``), and every test of the file when the path sits
anywhere else (selected conservatively, the reason says so). A YAML or JSON file whose parsed
content did not change (comments, formatting) reaches nothing.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable

import yaml

from selector.changes.book import CandidateBook
from selector.changes.classify import CPP_SUFFIXES
from selector.changes.report import FileChange
from selector.changes.yaml_items import LOADER, YamlItemError, diff_items
from selector.inventory.model import FileInventory, Inventory
from selector.model import Evidence

_PARSERS = {".yaml": lambda text: yaml.load(text, Loader=LOADER), ".yml": lambda text: yaml.load(text, Loader=LOADER),
            ".json": json.loads}


MAX_NAMED_OPS = 20  # more changed ops than this in one file: one reason without ops (a release's yaml)


def is_data_file(path: str) -> bool:
    """Files a test reads rather than imports or compiles: anything but Python and C++ sources."""
    return not path.endswith((".py", ".pyi") + CPP_SUFFIXES)


def has_parser(path: str) -> bool:
    return path.endswith(tuple(_PARSERS))


def same_content(path: str, before: str | None, after: str | None) -> bool:
    """Whether the two sides parse to the same data (a comment- or formatting-only edit)."""
    parse = next((p for suffix, p in _PARSERS.items() if path.endswith(suffix)), None)
    if parse is None or before is None or after is None:
        return before == after
    if path.endswith((".yaml", ".yml")):
        try:
            diff = diff_items(before, after)  # a top-level list: parse only the items that differ
        except YamlItemError:
            return False
        if diff is not None:
            return all([data for _, data in old] == [data for _, data in new] for old, new in diff.runs)
    try:
        return parse(before) == parse(after)
    except (yaml.YAMLError, ValueError):
        return False


def data_file_readers(changes: list[FileChange], inventory: Inventory,
                      read: Callable[[list[str]], dict[str, str | None]], book: CandidateBook,
                      hunk_of: Callable[[FileChange], str | None], ops: dict[str, list[str]] | None = None) -> None:
    """Select the tests that read the changed data files ``changes``; ``hunk_of`` gives a change's
    first hunk (asked only for a file some test names). ``ops``: per path, the ops whose entries
    changed (YAML op declarations): each reason names one, so a test parametrized over the file's
    ops runs the variants of those ops first (stage 4's order); every variant stays selected."""
    if not changes:
        return
    by_path = {change.path: change for change in changes}
    pattern = re.compile("|".join(re.escape(p) for p in sorted(by_path, key=len, reverse=True)))
    texts = read(sorted(inventory.files))
    for test_path, text in sorted(texts.items()):
        if not text or not any(data_path in text for data_path in by_path):  # = pattern.search, 4x faster
            continue
        lines = text.splitlines()
        file_inv = inventory.files[test_path]
        for data_path in sorted({m.group(0) for m in pattern.finditer(text)}):
            change = by_path[data_path]
            _select_readers(test_path, file_inv, lines, data_path, change, hunk_of(change), book,
                            _named_ops((ops or {}).get(data_path)))


def _named_ops(ops: list[str] | None) -> list[str | None]:
    return ops if ops and len(ops) <= MAX_NAMED_OPS else [None]


def _select_readers(test_path: str, file_inv: FileInventory, lines: list[str], data_path: str,
                    change: FileChange, hunk: str | None, book: CandidateBook, ops: list[str | None]) -> None:
    # a comment naming the file ("see test/cpp/api/autograd.cpp") reads nothing
    naming = {n for n, line in enumerate(lines, 1) if data_path in line.split("#", 1)[0]}
    if not naming:
        return

    def names_it(lo: int, hi: int) -> bool:
        return any(lo <= n <= hi for n in naming)
    tests = [t for c in file_inv.classes for t in c.tests] + list(file_inv.functions)
    seeds = {name for name, (_, lo, hi) in file_inv.assignments.items() if names_it(lo, hi)}
    seeds |= {h.name for h in file_inv.helpers if names_it(h.lineno, h.end_lineno)}
    seeds |= {f"self.{h.name}" for c in file_inv.classes for h in c.helpers if names_it(h.lineno, h.end_lineno)}
    covered = {n for name, (_, lo, hi) in file_inv.assignments.items() for n in range(lo, hi + 1)} | \
        {n for h in file_inv.helpers + [h for c in file_inv.classes for h in c.helpers]
         for n in range(h.lineno, h.end_lineno + 1)} | \
        {n for t in tests for n in range(t.lineno, t.end_lineno + 1)}
    if naming - covered:  # the path sits where no definition holds it (a class body, a loop at module level)
        for test in tests:
            book.add(test_path, test, "helper", Evidence(
                file=change.path, hunk=hunk,
                detail=f"{test_path} names changed {data_path}; what reads it cannot be traced: selected conservatively"))
        return
    reach = _reach(seeds, file_inv, lines)
    for test in tests:
        hit = sorted(reach.intersection(test.uses + test.names))
        if names_it(test.lineno, test.end_lineno):
            detail = f"reads changed {data_path} by its path"
        elif hit:
            detail = f"reads {hit[0]}, which comes from changed {data_path} (read by its path)"
        else:
            continue
        for op in ops:
            book.add(test_path, test, "helper", Evidence(file=change.path, hunk=hunk, op=op, detail=detail))


def _reach(seeds: set[str], file_inv: FileInventory, lines: list[str]) -> set[str]:
    """``seeds`` and the module names and helpers built from them, transitively."""
    reads = {h.name: set(h.uses + h.names) for h in file_inv.helpers}
    reads |= {f"self.{h.name}": set(h.uses + h.names) for c in file_inv.classes for h in c.helpers}
    for name, (_, lo, hi) in file_inv.assignments.items():  # NAMES = build(OTHER): words of its lines
        reads[name] = set(re.findall(r"[A-Za-z_]\w*", "\n".join(lines[lo - 1:hi])))
    out = set(seeds)
    grew = True
    while grew:
        grew = False
        for name, used in reads.items():
            if name not in out and out & used:
                out.add(name)
                grew = True
    return out
