"""Load rules files (or directories of them) into one RuleSet, reporting every problem with file:line."""
from __future__ import annotations

import os
import types
import typing
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, ValidationError

from testdefs.errors import Problem, RulesError
from testdefs.global_config import GlobalConfig
from testdefs.matching import NamePattern
from testdefs.relevance import RelevanceIndex
from testdefs.ruleset import CompiledEntry, FileSection, RuleSet
from testdefs.schema import RulesDocument
from testdefs.yaml_lines import LineIndex, format_loc, parse_yaml

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
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            problems.append(Problem(name, None, "", "file not found"))
            continue
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(name, None, "", f"cannot read: {exc}"))
            continue
        document, lines, file_problems = parse_document(text, name)
        problems.extend(sorted(file_problems, key=lambda p: p.line or 0))
        if document is not None and not file_problems:
            loaded.append((name, document, lines))
    if problems:
        raise RulesError(problems)
    return build_ruleset(loaded)


def parse_document(text: str, name: str) -> tuple[RulesDocument | None, LineIndex, list[Problem]]:
    """Parse and validate one rules file's text; problems instead of exceptions."""
    parsed = parse_yaml(text, name)
    if parsed.problems and parsed.data is None:
        return None, parsed.lines, parsed.problems
    data = {} if parsed.data is None else parsed.data
    try:
        document = RulesDocument.model_validate(data)
    except ValidationError as exc:
        return None, parsed.lines, parsed.problems + [_problem(name, parsed.lines, err) for err in exc.errors()]
    return document, parsed.lines, parsed.problems


def _problem(name: str, lines: LineIndex, err: dict) -> Problem:
    loc = tuple(err["loc"])
    kind = err["type"]
    message = err["msg"].removeprefix("Value error, ").removeprefix("Assertion failed, ")
    if kind == "extra_forbidden":
        allowed = _fields_at(loc[:-1])
        message = f"unknown field {loc[-1]!r}" + (f"; expected one of: {', '.join(allowed)}" if allowed else "")
    elif kind == "missing":
        message = f"missing required field {loc[-1]!r}"
    elif "input" in err and isinstance(err["input"], (str, int, float, bool)) and kind not in ("value_error",):
        message += f" (got {err['input']!r})"
    return Problem(name, lines.line_of(loc), format_loc(loc), message)


def _fields_at(loc: Sequence[str | int]) -> list[str]:
    """YAML keys allowed at a location, found by walking the models' annotations."""
    model: type[BaseModel] | None = RulesDocument
    for part in loc:
        if model is None:
            return []
        if isinstance(part, int):
            continue
        field = next((f for key, f in model.model_fields.items() if (f.alias or key) == part), None)
        model = _model_in(field.annotation) if field else None
    if model is None:
        return []
    return [f.alias or key for key, f in model.model_fields.items()]


def _model_in(annotation) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _model_in(typing.get_args(annotation)[0])
    if origin in (list, typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            found = _model_in(arg)
            if found is not None:
                return found
    return None


def build_ruleset(loaded: list[tuple[str, RulesDocument, LineIndex]]) -> RuleSet:
    """Compile validated documents into a RuleSet, keeping a 'file:line' ref for every rule."""
    sections: list[FileSection] = []
    config = GlobalConfig()
    relevance = RelevanceIndex()
    for name, document, lines in loaded:
        def ref(*loc: str | int) -> str:  # called only within this iteration
            return f"{name}:{lines.line_of(loc) or 1}"  # noqa: B023

        for i, file_rules in enumerate(document.files):
            section = FileSection(file_rules.path, file_rules.unlisted_test_mode, ref("files", i))
            for j, entry in enumerate(file_rules.entries):
                patterns = [(NamePattern.compile(text), ref("files", i, "entries", j, "match", k))
                            for k, text in enumerate(entry.match)]
                section.entries.append(CompiledEntry(entry, ref("files", i, "entries", j), patterns))
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
