"""Test function sources at the to-ref, read by AST without importing the upstream code.

Stages 3 and 4 read the same facts of the to-ref's files (the tests with their source, every
definition's line span, each class's test methods); ``ToRefSources`` parses each file once per
selection for all of them (``SelectContext.sources()``).
"""
from __future__ import annotations

import ast
import bisect
import hashlib
import pickle
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from selector.gc_pause import without_gc_pauses
from selector.hunks import Hunk
from selector.inventory.cache import open_cache
from selector.inventory.scan import run_pickled

# the blob cache's kind for these facts: changes whenever this module does, so no result outlives its code
FACTS_KIND = "to-ref-facts-" + hashlib.blake2b(Path(__file__).read_bytes(), digest_size=6).hexdigest()


@dataclass
class TestSource:
    __test__ = False  # not a pytest class

    test_id: str  # normalised: file::Class::method
    file: str
    line: int
    source: str
    references: set[str] = field(default_factory=set)  # names and attributes the body uses


@dataclass
class FileFacts:
    """What the later stages read of one file at the to-ref, from one parse."""

    tests: dict[str, TestSource] = field(default_factory=dict)  # every test_* function and method
    spans: list[tuple[int, int, str]] = field(default_factory=list)  # (first, last line, name) of every def/class


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


def file_facts(rel_path: str, text: str, _memo=None) -> FileFacts:
    """The facts of one file's text (a ``run_scans`` scanner); empty when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return FileFacts()
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
    spans = [(node.lineno, node.end_lineno or node.lineno, node.name) for node in _statements(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return FileFacts(tests=found, spans=spans)


# What can hold a statement: definitions are statements, and expressions hold none (a lambda's body
# is an expression), so the walk for them need not enter expressions, most of a module's nodes.
_HOLDERS = (ast.stmt, ast.excepthandler, ast.match_case)


def _statements(tree: ast.Module):
    """The statements of ``tree`` (and the handlers and cases holding some) in ``ast.walk``'s order:
    breadth first, each node's children in field order."""
    queue = deque([tree])
    while queue:
        node = queue.popleft()
        queue.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, _HOLDERS))
        yield node


def _read(root: Path, rel_path: str) -> str | None:
    try:
        return (root / rel_path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


class ToRefSources:
    """The facts of the to-ref checkout's files, each file parsed at most once.

    With ``source`` and ``sha`` (the checkout's commit) and a source that names blobs (git), the
    facts are kept in its blob cache by blob id, so the next selection parses only changed files."""

    def __init__(self, root: Path, source=None, sha: str | None = None) -> None:
        self.root = Path(root)
        self._facts: dict[str, FileFacts] = {}
        self._sha = sha
        self._source = source
        self._cache = open_cache(source, getattr(source, "cache_dir", None)) if source is not None and sha else None

    def _blob(self, rel_path: str) -> str | None:
        return self._source.blob_id(self._sha, rel_path) if self._cache is not None else None

    @without_gc_pauses
    def load(self, files) -> None:
        """Parse the files not parsed (or cached) yet, on every core (a release's whole test tree)."""
        texts, stores = [], []
        for rel_path in sorted(set(files) - set(self._facts)):
            blob = self._blob(rel_path)
            cached = self._cache.get(FACTS_KIND, blob, rel_path) if blob is not None else None
            if cached is not None:
                self._facts[rel_path] = cached
                continue
            text = _read(self.root, rel_path)
            if text is None:
                self._facts[rel_path] = FileFacts()  # unreadable or gone at the to-ref
            else:
                texts.append((rel_path, text))
                stores.append(self._cache.path(FACTS_KIND, blob, rel_path) if blob is not None else None)
        if not texts:
            return
        for (rel_path, _), data in zip(texts, run_pickled([(file_facts, p, t) for p, t in texts], stores)):
            self._facts[rel_path] = pickle.loads(data)  # the workers kept each in the cache

    def facts(self, rel_path: str) -> FileFacts:
        if rel_path not in self._facts:
            self.load([rel_path])
        return self._facts[rel_path]

    def tests(self, files) -> dict[str, TestSource]:
        """Every test of ``files`` by normalised id."""
        files = sorted(set(files))
        self.load(files)
        out: dict[str, TestSource] = {}
        for rel_path in files:
            out.update(self._facts[rel_path].tests)
        return out

    def class_methods(self, rel_path: str) -> dict[str, set[str]]:
        """Test method names per class of one file ('' for module-level tests): to match collected
        variants back to methods."""
        methods: dict[str, set[str]] = {}
        for test_id in self.facts(rel_path).tests:
            parts = test_id.split("::")
            methods.setdefault(parts[1] if len(parts) == 3 else "", set()).add(parts[-1])
        return methods

    def mark_enclosing(self, hunks: list[Hunk]) -> None:
        """Fill each Python hunk's ``enclosing``: the functions and classes of the to-ref around its change."""
        by_file: dict[str, list[Hunk]] = {}
        for hunk in hunks:
            if hunk.file.endswith(".py"):
                by_file.setdefault(hunk.file, []).append(hunk)
        self.load(by_file)
        for rel_path, found in by_file.items():
            # every changed line with its hunk, sorted: each definition takes the lines inside its span
            marks = sorted((line, index) for index, hunk in enumerate(found)
                           for line in (hunk.changed_lines or [hunk.new_start]))
            lines = [line for line, _ in marks]
            names: list[set[str]] = [set() for _ in found]
            for start, end, name in self._facts[rel_path].spans:
                for position in range(bisect.bisect_left(lines, start), bisect.bisect_right(lines, end)):
                    names[marks[position][1]].add(name)
            for hunk, enclosing in zip(found, names):
                hunk.enclosing = enclosing


def scan_file(root: Path, rel_path: str) -> dict[str, TestSource]:
    """Every ``test_*`` function and method of one file, by normalised id; {} if unreadable."""
    text = _read(Path(root), rel_path)
    return {} if text is None else file_facts(rel_path, text).tests


def class_methods(root: Path, rel_path: str) -> dict[str, set[str]]:
    """Method names per class of one test file (for matching collected variants back to methods)."""
    return ToRefSources(root).class_methods(rel_path)


def scan_tests(root: Path, files: list[str]) -> dict[str, TestSource]:
    """The tests of many files (a release's whole test tree for the agent's pool), parsed on every core."""
    return ToRefSources(root).tests(files)


def test_files(root: Path) -> list[str]:
    """Upstream test modules under test/ (the pool the agent may add tests from)."""
    base = root / "test"
    if not base.is_dir():
        return []
    return sorted(str(p.relative_to(root)) for p in base.rglob("test_*.py") if p.is_file())


def mark_enclosing(hunks: list[Hunk], root: Path) -> None:
    """``ToRefSources.mark_enclosing`` for callers without a selection's shared sources."""
    ToRefSources(root).mark_enclosing(hunks)
