"""Test function sources at the to-ref, read by AST without importing the upstream code."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from selector.gc_pause import without_gc_pauses
from selector.hunks import Hunk
from selector.inventory.scan import run_scans


@dataclass
class TestSource:
    __test__ = False  # not a pytest class

    test_id: str  # normalised: file::Class::method
    file: str
    line: int
    source: str
    references: set[str] = field(default_factory=set)  # names and attributes the body uses


def _references(node: ast.AST) -> set[str]:
    names: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name):
            names.add(child.id)
        elif isinstance(child, ast.Attribute):
            names.add(child.attr)
        elif isinstance(child, ast.Constant) and isinstance(child.value, str) and child.value.isidentifier():
            names.add(child.value)  # op names in @ops(..., allowed=["add"]) style filters
    return names


def scan_file(root: Path, rel_path: str) -> dict[str, TestSource]:
    """Every ``test_*`` function and method of one file, by normalised id; {} if unreadable."""
    try:
        text = (root / rel_path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    return _sources(rel_path, text)


def _sources(rel_path: str, text: str, _code_memo: dict | None = None) -> dict[str, TestSource]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    lines = text.splitlines()
    found: dict[str, TestSource] = {}

    def add(node: ast.FunctionDef | ast.AsyncFunctionDef, class_name: str | None) -> None:
        if not node.name.startswith("test"):
            return
        test_id = "::".join(p for p in (rel_path, class_name, node.name) if p)
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        body = "\n".join(lines[start - 1: node.end_lineno])
        found[test_id] = TestSource(test_id=test_id, file=rel_path, line=node.lineno, source=body,
                                    references=_references(node))

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            add(node, None)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    add(item, node.name)
    return found


def class_methods(root: Path, rel_path: str) -> dict[str, set[str]]:
    """Method names per class of one test file (for matching collected variants back to methods)."""
    methods: dict[str, set[str]] = {}
    for test_id in scan_file(root, rel_path):
        parts = test_id.split("::")
        methods.setdefault(parts[1] if len(parts) == 3 else "", set()).add(parts[-1])
    return methods


@without_gc_pauses
def scan_tests(root: Path, files: list[str]) -> dict[str, TestSource]:
    """The tests of many files (a release's whole test tree for the agent's pool), parsed on every core."""
    texts = []
    for rel_path in sorted(set(files)):
        try:
            texts.append((rel_path, (root / rel_path).read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    out: dict[str, TestSource] = {}
    for found in run_scans([(_sources, rel_path, text) for rel_path, text in texts]):
        out.update(found)
    return out


def test_files(root: Path) -> list[str]:
    """Upstream test modules under test/ (the pool the agent may add tests from)."""
    base = root / "test"
    if not base.is_dir():
        return []
    return sorted(str(p.relative_to(root)) for p in base.rglob("test_*.py") if p.is_file())


def mark_enclosing(hunks: list[Hunk], root: Path) -> None:
    """Fill each Python hunk's ``enclosing``: the functions and classes of the to-ref around its change."""
    spans_by_file: dict[str, list[tuple[int, int, str]]] = {}
    for hunk in hunks:
        if not hunk.file.endswith(".py"):
            continue
        if hunk.file not in spans_by_file:
            spans_by_file[hunk.file] = _definition_spans(root / hunk.file)
        lines = hunk.changed_lines or [hunk.new_start]
        hunk.enclosing = {name for start, end, name in spans_by_file[hunk.file]
                          if any(start <= line <= end for line in lines)}


def _definition_spans(path: Path) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every function and class in a file at the to-ref."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return []
    return [(node.lineno, node.end_lineno or node.lineno, node.name) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
