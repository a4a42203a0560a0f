"""Diff hunks between two refs, and the code symbols they touch.

Read with one ``git diff -U3`` through GitPython on the to-ref checkout (it holds both
commits), so the agent sees the same change whatever stage 1 kept of it.
"""
from __future__ import annotations

import ast
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import git

_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")
_DEFINES = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")
_OPINFO_NAME = re.compile(r"""(?:OpInfo|UnaryUfuncInfo|BinaryUfuncInfo|ReductionOpInfo|\w+Info)\(\s*['"]([\w.]+)['"]""")
_NAME_KW = re.compile(r"""\bname\s*=\s*['"]([\w.]+)['"]""")
_YAML_FUNC = re.compile(r"^\s*-?\s*(?:func|name):\s*([A-Za-z_]\w*)")  # native_functions / derivatives
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Hunk:
    file: str
    header: str  # "@@ -10,4 +10,6 @@"
    context: str  # the text git prints after the header (enclosing def or class)
    new_start: int
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    changed_lines: list[int] = field(default_factory=list)  # new-side line numbers of added lines
    enclosing: set[str] = field(default_factory=set)  # functions/classes around the change (AST)

    @property
    def text(self) -> str:
        return "\n".join(["-" + line for line in self.removed] + ["+" + line for line in self.added])

    @property
    def hunk_id(self) -> str:
        return f"{self.file}{self.header}"

    @property
    def digest(self) -> str:
        """Content hash: the cache key of verdicts about this hunk."""
        return hashlib.sha256(f"{self.file}\n{self.text}".encode()).hexdigest()[:16]

    def symbols(self) -> set[str]:
        """Functions/classes the hunk defines or sits in, and OpInfo names it edits."""
        found: set[str] = set(self.enclosing)
        for line in self.removed + self.added + [self.context]:
            for pattern in (_DEFINES, _OPINFO_NAME, _NAME_KW, _YAML_FUNC):
                found.update(m.group(1) for m in pattern.finditer(line) if m)
        return {name for name in found if len(name) > 2}

    def identifiers(self) -> list[str]:
        return _IDENT.findall(self.context + "\n" + self.text)


def read_hunks(repo_dir: Path, from_sha: str, to_sha: str) -> list[Hunk]:
    """Every hunk of the Python files changed between two commits, in file order."""
    repo = git.Repo(repo_dir)
    text = repo.git.diff(from_sha, to_sha, "-U3", "--no-color", "--no-ext-diff", "-M", "--", "*.py", "*.yaml")
    hunks = parse_diff(text)
    spans_by_file: dict[str, list[tuple[int, int, str]]] = {}
    for hunk in hunks:
        if not hunk.file.endswith(".py"):
            continue
        if hunk.file not in spans_by_file:
            spans_by_file[hunk.file] = _definition_spans(Path(repo_dir) / hunk.file)
        lines = hunk.changed_lines or [hunk.new_start]
        hunk.enclosing = {name for start, end, name in spans_by_file[hunk.file]
                          if any(start <= line <= end for line in lines)}
    return hunks


def _definition_spans(path: Path) -> list[tuple[int, int, str]]:
    """(first line, last line, name) of every function and class in a file at the to-ref."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, SyntaxError, ValueError):
        return []
    return [(node.lineno, node.end_lineno or node.lineno, node.name) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def parse_diff(text: str) -> list[Hunk]:
    hunks: list[Hunk] = []
    current_file: str | None = None
    hunk: Hunk | None = None
    new_line = 0
    for line in text.splitlines():
        if line.startswith("diff --git"):
            hunk = None
            current_file = None
        elif line.startswith("+++ "):
            target = line[4:].strip()
            if target != "/dev/null":  # a deleted file keeps the name from its --- line
                current_file = target.removeprefix("b/")
        elif line.startswith("--- ") and hunk is None:
            source = line[4:].strip()
            if source != "/dev/null" and current_file is None:
                current_file = source.removeprefix("a/")
        elif line.startswith("@@"):
            found = _HEADER.match(line)
            if found and current_file:
                header = line[: line.index("@@", 2) + 2]
                hunk = Hunk(file=current_file, header=header, context=found.group(3).strip(),
                            new_start=int(found.group(2)))
                hunks.append(hunk)
                new_line = hunk.new_start
        elif hunk is not None and line.startswith("+"):
            hunk.added.append(line[1:])
            hunk.changed_lines.append(new_line)
            new_line += 1
        elif hunk is not None and line.startswith("-"):
            hunk.removed.append(line[1:])
        elif hunk is not None and line.startswith(" "):
            new_line += 1
    return hunks
