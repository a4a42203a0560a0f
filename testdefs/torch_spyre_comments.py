"""Who each YAML comment of a torch-spyre config belongs to.

torch-spyre keeps its reasons in comments, which a YAML parser throws away. Every comment line is
given to exactly one owner, by where it stands relative to the structure (lines from
``LineIndex``):

- a comment after a name (``- TestFoo::test_bar  # issue 4328``) belongs to that name;
- a comment after ``mode:`` (``mode: xfail  # xfail: NotImplementedError``) is the item's failure class;
- comment lines inside a ``names`` list head the names after them (a group heading);
- other comment lines inside an item, on its ``- names:`` line, or directly above it belong to the item;
- comment lines above ``- path:`` (or inside a file entry before its tests) belong to the file entry;
- comment lines before ``test_suite_config`` belong to the document, those in ``global`` to it;
- commented-out YAML (``# - names:``, ``#   - TestFoo::test_bar``, ``# - name: float64``) is not a
  comment: it is reported as such, together with the prose lines just above it that describe it;
- lines that are only decoration (``# ------``) carry nothing and are counted.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from testdefs.safe_yaml import LineIndex

_COMMENTED_YAML = re.compile(
    r"^(-\s+)?(names|name|mode|tags|labels|edits|path|unlisted_test_mode|tests|dtypes|ops|include|exclude|"
    r"functions|cpu_move|precision|atol|rtol|force_xfail|description|supported_dtypes|supported_ops)\s*:(\s|$)"
    r"|^-\s+[A-Za-z_][\w:*.\[\]]*\s*(#.*)?$"
)


def comment_text(raw: str) -> str:
    """``  # ---- Tests that fail ----`` -> ``Tests that fail``; decoration-only -> ''."""
    text = raw.strip().lstrip("#").strip()
    return text.strip("#-=* ").strip()


def trailing_comment(line: str) -> str | None:
    """The comment after content on a line (``- name  # why``), or None. Quoted '#'s are skipped."""
    quote = None
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char == "#" and index > 0 and line[index - 1] in " \t" and line[:index].strip():
            return line[index:]
    return None


def is_commented_yaml(raw: str) -> bool:
    return bool(_COMMENTED_YAML.match(raw.strip()[1:].strip()))


def _commented_out_flags(run: list[tuple[int, str]]) -> list[bool]:
    """Which lines of a comment run are commented-out YAML: YAML-looking lines, and the ``#   # ...``
    continuation lines that follow one (comments of the commented-out item)."""
    flags: list[bool] = []
    for _, raw in run:
        body = raw.strip()[1:]
        continuation = bool(flags) and flags[-1] and body.lstrip().startswith("#")
        flags.append(is_commented_yaml(raw) or continuation)
    return flags


@dataclass
class Comments:
    document: list[str] = field(default_factory=list)
    files: dict[int, list[str]] = field(default_factory=dict)  # file index -> notes
    items: dict[tuple[int, int], list[str]] = field(default_factory=dict)  # (file, test) -> comments
    modes: dict[tuple[int, int], str] = field(default_factory=dict)  # (file, test) -> comment on mode:
    names: dict[tuple[int, int, int], str] = field(default_factory=dict)  # (file, test, name) -> own comment
    groups: dict[tuple[int, int, int], list[str]] = field(default_factory=dict)  # group heading over a name
    global_notes: list[str] = field(default_factory=list)
    commented_out: list[tuple[int, str]] = field(default_factory=list)  # (line, text)
    decoration: int = 0


def _max_line(value: object, lines: LineIndex, start: int) -> int:
    """The last line any part of a loaded value starts on."""
    best = start
    stack = [value]
    while stack:
        node = stack.pop()
        items = lines.item_lines(node)
        if items is None:
            continue
        values = items.values() if isinstance(items, dict) else items
        best = max([best, *values])
        stack.extend(node.values() if isinstance(node, dict) else node)
    return best


def attribute(text: str, data: dict, lines: LineIndex) -> Comments:
    """Give every comment line of ``text`` its owner (see the module docstring)."""
    raw_lines = text.splitlines()
    out = Comments()
    suite = data["test_suite_config"]
    suite_line = lines.item_lines(data)["test_suite_config"]
    owner_of_line: dict[int, tuple] = {}  # structural line -> owner for trailing comments
    spans: list[tuple[int, int, tuple]] = []  # (first line, last line, owner) for full-line comments
    above: list[tuple[int, tuple]] = []  # (line of a structure, owner of comments directly above it)

    suite_items = lines.item_lines(suite) or {}
    for key in ("labels", "files"):
        if key in suite_items:
            owner_of_line.setdefault(suite_items[key], ("document",))
    files = suite.get("files") or []
    for fi, file_data in enumerate(files):
        file_items = lines.item_lines(file_data) or {}
        file_start = lines.start_line(file_data)
        file_end = _max_line(file_data, lines, file_start)
        above.append((file_start, ("file", fi)))
        spans.append((file_start, file_end, ("file", fi)))
        for key in ("path", "unlisted_test_mode", "tests", "description"):
            if key in file_items:
                owner_of_line.setdefault(file_items[key], ("file", fi))
        owner_of_line[file_start] = ("file", fi)
        for ti, test in enumerate(file_data.get("tests") or []):
            test_items = lines.item_lines(test) or {}
            start = lines.start_line(test)
            end = _max_line(test, lines, start)
            above.append((start, ("item", fi, ti)))
            spans.append((start, end, ("item", fi, ti)))
            for line in range(start, end + 1):
                owner_of_line.setdefault(line, ("item", fi, ti))
            owner_of_line[start] = ("item", fi, ti)
            if "mode" in test_items:
                owner_of_line[test_items["mode"]] = ("mode", fi, ti)
            names = test.get("names")
            name_lines = lines.item_lines(names) if isinstance(names, list) else None
            if name_lines:
                for ni, line in enumerate(name_lines):
                    owner_of_line[line] = ("name", fi, ti, ni)
                names_key = _key_line(raw_lines, name_lines[0], "names")
                spans.append((names_key, name_lines[-1], ("names", fi, ti, name_lines)))
    global_data = suite.get("global")
    if isinstance(global_data, dict):
        global_line = suite_items["global"]
        global_start = _key_line(raw_lines, global_line, "global")
        above.append((global_start, ("global",)))
        spans.append((global_start, max(_max_line(global_data, lines, global_line), len(raw_lines)), ("global",)))
        for line in range(global_start, _max_line(global_data, lines, global_line) + 1):
            owner_of_line.setdefault(line, ("global",))

    starts = {start: owner for start, owner in above}

    def span_owner(line: int) -> tuple | None:
        inner = [(first, last, owner) for first, last, owner in spans if first <= line <= last]
        return min(inner, key=lambda s: s[1] - s[0])[2] if inner else None

    pending: list[tuple[int, str]] = []  # a run of full-line comments, flushed at the next content

    def give(owner: tuple | None, line: int, text_: str) -> None:
        if owner is None or owner[0] == "document" or line < suite_line:
            out.document.append(text_)
        elif owner[0] == "file":
            out.files.setdefault(owner[1], []).append(text_)
        elif owner[0] == "item":
            out.items.setdefault((owner[1], owner[2]), []).append(text_)
        else:
            out.global_notes.append(text_)

    def flush(next_content: int | None) -> None:
        if not pending:
            return
        yaml_at = [i for i, flag in enumerate(_commented_out_flags(pending)) if flag]
        prose = pending
        if yaml_at:  # commented-out YAML, with the prose just above it that describes it
            for line, raw in pending[: yaml_at[-1] + 1]:
                if comment_text(raw):
                    out.commented_out.append((line, raw.strip()))
                else:
                    out.decoration += 1
            prose = pending[yaml_at[-1] + 1:]
        for line, raw in prose:
            text_ = comment_text(raw)
            if not text_:
                out.decoration += 1
                continue
            inside = span_owner(line)
            if inside is not None and inside[0] == "names":
                _, fi, ti, name_lines = inside
                ni = next(i for i, name_line in enumerate(name_lines) if name_line > line)
                out.groups.setdefault((fi, ti, ni), []).append(text_)
            elif next_content in starts:
                give(starts[next_content], line, text_)
            else:
                give(inside, line, text_)
        pending.clear()

    for number, raw in enumerate(raw_lines, start=1):
        stripped = raw.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            pending.append((number, raw))
            continue
        flush(number)
        trailing = trailing_comment(raw)
        if trailing is None:
            continue
        text_ = comment_text(trailing)
        if not text_:
            out.decoration += 1
            continue
        owner = owner_of_line.get(number) or span_owner(number)
        if owner is None or owner[0] in ("document", "file", "item", "global"):
            give(owner, number, text_)
        elif owner[0] == "mode":
            out.modes[(owner[1], owner[2])] = text_
        elif owner[0] == "name":
            out.names[(owner[1], owner[2], owner[3])] = text_
        else:
            give(None, number, text_)
    flush(None)
    _extend_groups(out, files)
    return out


def _key_line(raw_lines: list[str], value_line: int, key: str) -> int:
    """The line of ``key:`` whose value starts on ``value_line`` (the same line, or the one above)."""
    for line in range(value_line, 0, -1):
        if raw_lines[line - 1].strip().lstrip("- ").startswith(key + ":"):
            return line
    return value_line


def _extend_groups(out: Comments, files: list) -> None:
    """A group heading applies to the names after it, up to the next heading."""
    for fi, file_data in enumerate(files):
        for ti, test in enumerate(file_data.get("tests") or []):
            current: list[str] = []
            for ni in range(len(test.get("names") or [])):
                if (fi, ti, ni) in out.groups:
                    current = out.groups[(fi, ti, ni)]
                elif current:
                    out.groups[(fi, ti, ni)] = current
