"""Diff hunks: the one type every stage reads, the one parser of git's unified diff, and difflib
for sources that cannot diff.

A selection diffs its two refs once (stage 1, ``git diff -U0``); stage 1 points evidence at these
hunks and the agent stage scores tests against their text (see ``ChangeReport.hunks``).
"""
from __future__ import annotations

import bisect
import difflib
import hashlib
import re
from dataclasses import dataclass, field

_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?(.*)$")
_DEFINES = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")
_OPINFO_NAME = re.compile(r"""(?:OpInfo|UnaryUfuncInfo|BinaryUfuncInfo|ReductionOpInfo|\w+Info)\(\s*['"]([\w.]+)['"]""")
_NAME_KW = re.compile(r"""\bname\s*=\s*['"]([\w.]+)['"]""")
_YAML_FUNC = re.compile(r"^\s*-?\s*(?:func|name):\s*([A-Za-z_]\w*)")  # native_functions / derivatives
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SYMBOLS = (_DEFINES, _OPINFO_NAME, _NAME_KW, _YAML_FUNC)
# The same patterns for many lines joined by newlines: ^ at each line, and whitespace that stays
# within its line, so each finds in the joined text exactly what it finds line by line; each with
# the words a match must contain.
_SYMBOLS_IN_LINES = tuple(
    (re.compile(pattern.pattern.replace(r"\s", r"[^\S\n]"), re.MULTILINE), needles)
    for pattern, needles in zip(_SYMBOLS, (("def", "class"), ("Info(",), ("name",), ("func:", "name:"))))


@dataclass(eq=False)
class Hunk:
    """Lines ``old_start..+old_len`` of the old side replaced by ``new_start..+new_len`` of the new side."""

    old_start: int
    old_len: int
    new_start: int
    new_len: int
    file: str = ""  # the new path (the old one for a deleted file)
    context: str = ""  # the text git prints after the header (enclosing def or class)
    removed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    changed_lines: list[int] = field(default_factory=list)  # new-side line numbers of the added lines
    enclosing: set[str] = field(default_factory=set)  # definitions around the change (filled by the agent stage)

    @property
    def header(self) -> str:
        return f"@@ -{self.old_start},{self.old_len} +{self.new_start},{self.new_len} @@"

    def touches_new(self, lo: int, hi: int) -> bool:
        end = self.new_start + max(self.new_len, 1) - 1
        return self.new_start <= hi and end >= lo

    def touches_old(self, lo: int, hi: int) -> bool:
        end = self.old_start + max(self.old_len, 1) - 1
        return self.old_start <= hi and end >= lo

    @property
    def text(self) -> str:
        return "\n".join(["-" + line for line in self.removed] + ["+" + line for line in self.added])

    @property
    def hunk_id(self) -> str:
        return f"{self.file}{self.header}"

    @property
    def digest(self) -> str:
        """Content hash: the cache key of verdicts about this hunk."""
        return hashlib.sha256(f"{self.file}\n{self.text}".encode("utf-8", "surrogateescape")).hexdigest()[:16]

    def symbols(self) -> set[str]:
        """Functions/classes the hunk defines or sits in, and OpInfo names it edits."""
        found: set[str] = set(self.enclosing)
        # the changed lines in one text, the patterns spelled per line (a release diff has 600,000 lines)
        changed = "\n".join(self.removed + self.added)
        for pattern, needles in _SYMBOLS_IN_LINES:
            if any(needle in changed for needle in needles):  # most hunks hold none: skip the scan
                found.update(pattern.findall(changed))
        for pattern in _SYMBOLS:
            found.update(pattern.findall(self.context))
        return {name for name in found if len(name) > 2}

    def identifiers(self) -> list[str]:
        return _IDENT.findall(self.context + "\n" + self.text)


def new_side(header: str) -> tuple[int, int] | None:
    """(first line, line count) of a hunk header's new side (``@@ -3,2 +4,5 @@`` -> (4, 5)); None
    when ``header`` is not one. Evidence keeps hunks by header: this reads them back."""
    found = _HEADER.match(header)
    if found is None:
        return None
    return int(found.group(3)), int(found.group(4) if found.group(4) is not None else 1)


def parse_diff(text: str) -> dict[str, list[Hunk]]:
    """Hunks of a ``git diff`` (any -U), by file in diff order; every file the diff names has a key.

    The key is the new path; a deleted file keeps its old one.
    """
    out: dict[str, list[Hunk]] = {}
    current: str | None = None
    hunk: Hunk | None = None
    new_line = 0
    for line in text.split("\n"):  # not splitlines: a form feed or lone CR inside a line stays in it
        if hunk is not None:
            if line.startswith("+"):
                hunk.added.append(line[1:])
                hunk.changed_lines.append(new_line)
                new_line += 1
                continue
            if line.startswith("-"):
                hunk.removed.append(line[1:])
                continue
            if line.startswith(" "):
                new_line += 1
                continue
            if line.startswith("\\"):  # "\ No newline at end of file"
                continue
            hunk = None
        if line.startswith("diff --git"):
            current = None
        elif line.startswith("--- "):
            source = line[4:].strip()
            if source != "/dev/null":
                current = source.removeprefix("a/")
        elif line.startswith("+++ "):
            target = line[4:].strip()
            if target != "/dev/null":
                current = target.removeprefix("b/")
            if current is not None:
                out.setdefault(current, [])
        elif line.startswith("rename to "):
            current = line[len("rename to "):]
            out.setdefault(current, [])
        elif line.startswith("@@") and current is not None:
            found = _HEADER.match(line)
            if found:
                a, b, c, d, context = found.groups()
                hunk = Hunk(int(a), int(b or 1), int(c), int(d or 1), file=current, context=context.strip())
                out[current].append(hunk)
                new_line = hunk.new_start
    return out


def grouped(found: list[Hunk], context: int = 3) -> list[Hunk]:
    """Hunks of one file closer than ``2 * context`` unchanged lines merged, as ``git diff -U3`` groups
    them: the granularity a reader (and the agent's similarity ranking) works at. Stage 1 keeps the
    -U0 hunks, which point at the exact lines."""
    out: list[Hunk] = []
    for hunk in found:
        last = out[-1] if out else None
        if last is not None and last.file == hunk.file \
                and hunk.old_start - (last.old_start + last.old_len) <= 2 * context:
            out[-1] = Hunk(last.old_start, hunk.old_start + hunk.old_len - last.old_start,
                           last.new_start, hunk.new_start + hunk.new_len - last.new_start, file=last.file,
                           context=last.context, removed=last.removed + hunk.removed, added=last.added + hunk.added,
                           changed_lines=last.changed_lines + hunk.changed_lines)
        else:
            out.append(hunk)
    return out


def hunks(old: str | None, new: str | None, file: str = "") -> list[Hunk]:
    """The hunks between two texts, for sources that cannot diff in bulk (difflib, no context)."""
    a = (old or "").splitlines()
    b = (new or "").splitlines()
    out = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.append(Hunk(i1 + 1 if i2 > i1 else i1, i2 - i1, j1 + 1 if j2 > j1 else j1, j2 - j1, file=file,
                            removed=a[i1:i2], added=b[j1:j2], changed_lines=list(range(j1 + 1, j2 + 1))))
    return out


def hunk_for(found: list[Hunk], lo: int, hi: int, *, side: str = "new") -> str | None:
    """The header of the first hunk touching lines ``lo..hi`` of one side (else the file's first hunk).

    Hunks come in file order, so their last lines rise: a binary search finds the candidate
    (a release-sized OpInfo diff asks this thousands of times over thousands of hunks).
    """
    if not found:
        return None
    if side == "new":
        start = bisect.bisect_left(found, lo, key=lambda h: h.new_start + max(h.new_len, 1) - 1)
    else:
        start = bisect.bisect_left(found, lo, key=lambda h: h.old_start + max(h.old_len, 1) - 1)
    for hunk in found[start:start + 2]:
        if (hunk.touches_new(lo, hi) if side == "new" else hunk.touches_old(lo, hi)):
            return hunk.header
    return found[0].header
