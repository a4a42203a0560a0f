"""Load rules files (or directories of them) into one RuleSet, reporting every problem with file:line."""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from testdefs.errors import Problem, RulesError
from testdefs.global_config import GlobalConfig
from testdefs.matching import NamePattern
from testdefs.pydantic_problems import validation_problems
from testdefs.relevance import RelevanceIndex
from testdefs.ruleset import CompiledEntry, FileSection, RuleSet
from testdefs.safe_yaml import LineIndex, parse_yaml, read_file
from testdefs.schema import FileRules, RulesDocument

RULE_SUFFIXES = (".yaml", ".yml")


def rule_files(paths: Path | str | Sequence[Path | str]) -> list[Path]:
    """Expand directories (recursively, sorted) into their *.yaml / *.yml files."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    out: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.suffix in RULE_SUFFIXES and p.is_file()))
        else:
            out.append(path)
    return out


def display_path(path: Path) -> str:
    """Paths in refs: relative to the working directory when under it, else as given."""
    try:
        return os.path.relpath(path) if path.is_absolute() and path.resolve().is_relative_to(Path.cwd()) \
            else str(path)
    except ValueError:
        return str(path)


def load_rules(paths: Path | str | Sequence[Path | str]) -> RuleSet:
    """Load and merge rules files; raise RulesError listing every problem in every file."""
    files = rule_files(paths)
    problems: list[Problem] = []
    loaded: list[tuple[str, RulesDocument, LineIndex]] = []
    if not files:
        raise RulesError([Problem(", ".join(map(str, paths if isinstance(paths, (list, tuple)) else [paths])),
                                  None, "", "no rules files (*.yaml, *.yml) found")])
    for path in files:
        name = display_path(path)
        text, problem = read_file(path, name)
        if problem is not None:
            problems.append(problem)
            continue
        document, lines, file_problems = parse_document(text, name)
        text = None  # the file's text is not needed past parsing; let a large one go before the next
        problems.extend(sorted(file_problems, key=lambda p: p.line or 0))
        if document is not None and not file_problems:
            loaded.append((name, document, lines))
    if problems:
        raise RulesError(problems)
    return build_ruleset(loaded)


def parse_document(text: str, name: str) -> tuple[RulesDocument | None, LineIndex, list[Problem]]:
    """Parse and validate one rules file's text; problems instead of exceptions.

    File sections are validated one at a time and their raw data let go as soon as each is, so a
    large rules file never holds its raw form and its validated form whole at once.
    """
    parsed = parse_yaml(text, name)
    del text
    if parsed.problems and parsed.data is None:
        return None, parsed.lines, parsed.problems
    data = {} if parsed.data is None else parsed.data
    parsed.data = None
    sections = data.get("files") if isinstance(data, dict) else None
    if not isinstance(sections, list):
        return _validate_whole(data, name, parsed)
    problems = list(parsed.problems)
    files: list[FileRules] = []
    for index in range(len(sections)):
        raw, sections[index] = sections[index], None
        try:
            files.append(FileRules.model_validate(raw))
        except ValidationError as exc:
            problems += validation_problems(exc, name, parsed.lines, RulesDocument, prefix=("files", index))
    try:
        document = RulesDocument.model_validate({**data, "files": []})
    except ValidationError as exc:
        problems += validation_problems(exc, name, parsed.lines, RulesDocument)
        return None, parsed.lines, problems
    if len(problems) > len(parsed.problems):
        return None, parsed.lines, problems
    return document.model_copy(update={"files": files}), parsed.lines, problems


def _validate_whole(data: object, name: str, parsed) -> tuple[RulesDocument | None, LineIndex, list[Problem]]:
    try:
        return RulesDocument.model_validate(data), parsed.lines, parsed.problems
    except ValidationError as exc:
        return None, parsed.lines, parsed.problems + validation_problems(exc, name, parsed.lines, RulesDocument)


def build_ruleset(loaded: list[tuple[str, RulesDocument, LineIndex]]) -> RuleSet:
    """Compile validated documents into a RuleSet, keeping a 'file:line' ref for every rule."""
    sections: list[FileSection] = []
    config = GlobalConfig()
    relevance = RelevanceIndex()
    for name, document, lines in loaded:
        def ref(*loc: str | int) -> str:  # called only within this iteration
            return f"{name}:{lines.line_of(loc) or 1}"  # noqa: B023

        for i, file_rules in enumerate(document.files):
            section = FileSection(file_rules.path, file_rules.unlisted_test_mode, ref("files", i), note=file_rules.note)
            for j, entry in enumerate(file_rules.entries):
                entry_ref = ref("files", i, "entries", j)
                match_lines = lines.lines_under(("files", i, "entries", j, "match"))
                patterns = [(NamePattern.compile(text),
                             f"{name}:{match_lines[k]}" if k < len(match_lines) else ref("files", i, "entries", j, "match"))
                            for k, text in enumerate(entry.match)]
                section.entries.append(CompiledEntry(entry, entry_ref, patterns))
            sections.append(section)
        if document.global_ is not None:
            config.ref = config.ref or ref("global")
            config.exclude_unsupported |= document.global_.exclude_unsupported
            for k, dtype in enumerate(document.global_.supported_dtypes):
                config.supported_dtypes.setdefault(dtype.name, (dtype.precision, ref("global", "supported_dtypes", k)))
            for k, op in enumerate(document.global_.supported_ops):
                config.supported_ops.setdefault(op.name, (op, ref("global", "supported_ops", k)))
        if document.relevance is not None:
            for k, rule in enumerate(document.relevance.rules):
                relevance.rules.append((rule, ref("relevance", "rules", k)))
            for k, pattern in enumerate(document.relevance.always_run):
                relevance.always_run_refs.append((pattern, ref("relevance", "always_run", k)))
    return RuleSet(sections, config, relevance, [name for name, _, _ in loaded])
