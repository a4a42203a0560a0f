"""Loaded rules and the questions asked of them: how is this test run, which entries are stale or clash.

``RuleSet.decide`` is the single answer used by every layer (pytest plugin, device test base,
selector, `relay-cli testdefs explain`), so they cannot disagree.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass, field

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from testdefs import ids
from testdefs.global_config import GlobalConfig, Tolerance
from testdefs.matching import NamePattern, formatted_op, op_matches, path_covers
from testdefs.relevance import RelevanceIndex
from testdefs.schema import Category, Entry, Mode, Reason
from testdefs.versions import parse_torch_version

UNLISTED = "unlisted"  # mode of a test no rules file section covers


@dataclass(frozen=True)
class TestDecision:
    """How one instantiated test is run, and which rule says so."""

    __test__ = False  # not a pytest class

    test_id: str
    normalised: str
    mode: str  # a Mode value, or "unlisted"
    entry: str | None  # 'file:line' of the deciding entry (or of the global section); None if no entry
    reason: Reason | None
    tolerance: Tolerance | None = None
    rules_file: str | None = None  # 'file:line' of the file section covering the test
    pattern: str | None = None  # the pattern of the deciding entry that matched
    op: str | None = None  # OpInfo name used for op filters, when known
    tags: tuple[str, ...] = ()

    @property
    def strict(self) -> bool:
        return self.mode == Mode.xfail_strict

    def describe(self) -> str:
        """One line for skip/xfail reasons and `explain`."""
        where = self.entry or self.rules_file or "no rules file"
        if self.reason is None:
            how = "not listed" if self.entry is None else "listed"
            return f"{self.mode} ({how}; {where})"
        issue = f" {self.reason.issue}" if self.reason.issue else ""
        return f"{self.reason.category}: {self.reason.text}{issue} [{where}]"

    def to_dict(self) -> dict:
        return {
            "test_id": self.test_id,
            "normalised": self.normalised,
            "mode": self.mode,
            "entry": self.entry,
            "rules_file": self.rules_file,
            "pattern": self.pattern,
            "op": self.op,
            "reason": self.reason.model_dump(mode="json", exclude_none=True) if self.reason else None,
            "tolerance": None if self.tolerance is None else {
                "atol": self.tolerance.atol, "rtol": self.tolerance.rtol, "source": self.tolerance.source},
            "tags": list(self.tags),
        }


@dataclass(frozen=True)
class EntryMatch:
    """An entry whose pattern names a test; ``why_not`` says which filter keeps it from applying."""

    ref: str
    mode: str
    pattern: str
    why_not: str | None

    @property
    def applies(self) -> bool:
        return self.why_not is None


@dataclass(frozen=True)
class StaleEntry:
    """A rule that names nothing in a collected upstream tree."""

    ref: str  # 'file:line'
    kind: str  # "file": no collected test in the file; "pattern": the name matches no test;
    #            "filters": the name matches, but its dtype/op/version filters exclude every match
    subject: str
    message: str
    path: str = ""  # the upstream file path of the rules section

    def __str__(self) -> str:
        return f"{self.ref}: {self.kind}: {self.message}"


@dataclass(frozen=True)
class Conflict:
    """Entries that give one test two different answers (or say the same thing twice)."""

    kind: str  # "conflict" (different modes) or "duplicate" (same mode, same match, same filters)
    subject: str  # the pattern, test id or file path concerned
    refs: tuple[str, ...]
    modes: tuple[str, ...]

    def __str__(self) -> str:
        places = ", ".join(f"{ref} ({mode})" for ref, mode in zip(self.refs, self.modes))
        if self.kind == "duplicate":
            return f"{self.refs[0]}: duplicate: {self.subject} is listed again at {places}"
        return f"{self.refs[0]}: conflict: {self.subject} gets different modes from {places}"


@dataclass(frozen=True)
class _Hit:
    entry: CompiledEntry
    pattern: NamePattern
    op: str | None

    @property
    def specificity(self) -> tuple[int, int]:
        return (self.pattern.kind.rank, self.entry.filter_count(self.pattern))


@dataclass
class CompiledEntry:
    model: Entry
    ref: str  # 'file:line' of the entry
    patterns: list[tuple[NamePattern, str]]  # with the 'file:line' of each pattern

    @functools.cached_property
    def specifier(self) -> SpecifierSet | None:
        return SpecifierSet(self.model.when.torch) if self.model.when else None

    def filter_count(self, pattern: NamePattern) -> int:
        model = self.model
        return bool(model.dtypes or pattern.dtypes) + bool(model.ops) + bool(model.when)

    def listed_ops(self) -> list[str]:
        return [*self.model.ops.include, *self.model.ops.exclude] if self.model.ops else []

    def name_hits(self, tid: ids.TestId, op: str | None):
        """Yield (pattern, op) for each pattern naming the test, ignoring filters.

        Upstream names OpInfo tests ``<test>_<op.formatted_name>_<device>_<dtype>``; with the op known
        (or, when unknown, one of the ops this entry lists) the op suffix is removed too, so
        ``TestCommon::test_dtypes`` names ``test_dtypes_add_spyre_float32``.
        """
        names: list[tuple[str, str | None]] = [(tid.method_base, op)]
        method = tid.method_base
        if op:
            suffix = "_" + formatted_op(op)
            if method.endswith(suffix) and len(method) > len(suffix):
                names.append((method[: -len(suffix)], op))
        else:  # unknown op (e.g. `explain` without --op): try the ops this entry lists, and their variants
            for candidate in self.listed_ops():
                infix = "_" + formatted_op(candidate)
                at = method.rfind(infix)
                while at > 0:
                    rest = method[at + len(infix):]
                    if rest == "" or rest.startswith("_"):
                        names.append((method[:at], candidate))
                    at = method.rfind(infix, 0, at)
        for pattern, _ in self.patterns:
            for method, used_op in names:
                if pattern.matches(tid.class_base, method):
                    yield pattern, used_op
                    break

    def filters_pass(self, tid: ids.TestId, pattern: NamePattern, op: str | None,
                     version: Version | None) -> bool:
        return self.filter_failure(tid, pattern, op, version) is None

    def filter_failure(self, tid: ids.TestId, pattern: NamePattern, op: str | None,
                       version: Version | None) -> str | None:
        """Why this entry does not apply to a test its pattern names (None: it applies)."""
        dtypes = ", ".join(tid.dtypes) or "none"
        if pattern.dtypes and tid.dtypes != pattern.dtypes:
            return f"the pattern names dtype {', '.join(pattern.dtypes)}; the test has {dtypes}"
        model = self.model
        if model.dtypes:
            if model.dtypes.include and not any(d in model.dtypes.include for d in tid.dtypes):
                return f"dtypes.include does not list {dtypes}"
            if any(d in model.dtypes.exclude for d in tid.dtypes):
                return f"dtypes.exclude lists {dtypes}"
        if model.ops:
            if op is None:
                if model.ops.include:
                    return "ops.include needs the OpInfo, which is not known (give --op)"
            else:
                if model.ops.include and not any(op_matches(x, op) for x in model.ops.include):
                    return f"ops.include does not list {op}"
                if any(op_matches(x, op) for x in model.ops.exclude):
                    return f"ops.exclude lists {op}"
        if version is not None and self.specifier is not None \
                and not self.specifier.contains(version, prereleases=True):
            return f"when torch {model.when.torch} does not hold for torch {version}"
        return None

    def hit(self, tid: ids.TestId, op: str | None, version: Version | None) -> _Hit | None:
        best: _Hit | None = None
        for pattern, used_op in self.name_hits(tid, op):
            if self.filters_pass(tid, pattern, used_op, version):
                candidate = _Hit(self, pattern, used_op)
                if best is None or candidate.specificity > best.specificity:
                    best = candidate
        return best


@dataclass
class FileSection:
    path: str
    unlisted_test_mode: Mode
    ref: str
    entries: list[CompiledEntry] = field(default_factory=list)
    note: str | None = None


@dataclass
class RuleSet:
    """Every loaded rules file, merged. Build with ``testdefs.load_rules``."""

    sections: list[FileSection]
    global_config: GlobalConfig
    relevance: RelevanceIndex
    sources: list[str] = field(default_factory=list)  # the rules files, as displayed in refs

    def entries(self) -> list[CompiledEntry]:
        return [entry for section in self.sections for entry in section.entries]

    def tags(self) -> set[str]:
        return {tag for entry in self.entries() for tag in entry.model.tags}

    def sections_for(self, test_file: str) -> list[FileSection]:
        return [s for s in self.sections if path_covers(s.path, test_file)]

    def decide(self, test_id: str, *, torch_version: str | None = None, op: str | None = None,
               file_path: str | None = None) -> TestDecision:
        """The mode of one instantiated upstream test id, the entry deciding it, and why.

        ``file_path`` is the test file's real (absolute) path, for ids that name the file relative to
        somewhere other than the upstream root: rules name ``test/test_ops.py``, while pytest run with
        rootdir ``test/`` (as the relay runs upstream files) names it ``test_ops.py``.

        Among the entries that apply, the most specific wins: exact ``Class::method`` over exact
        ``method`` over glob/regex, then the one with more filters (dtype, op, when); on a tie the
        first in file order wins and ``conflicts()`` reports the tie.
        """
        tid = ids.parse(test_id)
        version = parse_torch_version(torch_version)
        sections = self.sections_for(file_path or tid.file)
        best: _Hit | None = None
        for section in sections:
            for entry in section.entries:
                found = entry.hit(tid, op, version)
                if found and (best is None or found.specificity > best.specificity):
                    best = found
        used_op = op if op is not None else (best.op if best else None)
        common = dict(test_id=test_id, normalised=tid.normalised, op=used_op,
                      rules_file=sections[0].ref if sections else None)
        excluded = self._global_exclusion(tid, used_op, best)
        if excluded is not None:
            category, text = excluded
            return TestDecision(mode=Mode.exclude.value, entry=self.global_config.ref,
                                reason=Reason(category=category, text=text), **common)
        tolerance = None
        if best and best.entry.model.precision:
            tolerance = Tolerance.of(best.entry.model.precision, best.entry.ref)
        elif tid.dtype:
            tolerance = self.global_config.tolerance(used_op, tid.dtype)
        if best is not None:
            model = best.entry.model
            return TestDecision(mode=model.mode.value, entry=best.entry.ref, reason=model.reason,
                                tolerance=tolerance, pattern=best.pattern.text, tags=tuple(model.tags), **common)
        mode = sections[0].unlisted_test_mode.value if sections else UNLISTED
        return TestDecision(mode=mode, entry=None, reason=None, tolerance=tolerance, **common)

    def matching_entries(self, test_id: str, *, torch_version: str | None = None,
                         op: str | None = None) -> list[EntryMatch]:
        """Every entry whose pattern names the test, whether it applies and, if not, why (for `explain`)."""
        tid = ids.parse(test_id)
        version = parse_torch_version(torch_version)
        out = []
        for section in self.sections_for(tid.file):
            for entry in section.entries:
                for pattern, used_op in entry.name_hits(tid, op):
                    why_not = entry.filter_failure(tid, pattern, used_op, version)
                    out.append(EntryMatch(entry.ref, entry.model.mode.value, pattern.text, why_not))
        return out

    def _global_exclusion(self, tid: ids.TestId, op: str | None, best: _Hit | None) -> tuple[Category, str] | None:
        """Why global.exclude_unsupported removes this variant, or None.

        The deciding entry re-enables what it names explicitly, and only that: naming the dtype
        (``dtypes.include``, a variant name, ``generate.dtypes``) lifts the dtype exclusion, naming the
        op (``ops.include``, ``generate.ops``) lifts the op exclusion.
        """
        config = self.global_config
        if not config.exclude_unsupported:
            return None
        names_dtype = names_op = False
        if best is not None:
            model = best.entry.model
            named_dtypes = [*(model.dtypes.include if model.dtypes else []), *best.pattern.dtypes,
                            *(model.generate.dtypes if model.generate else [])]
            named_ops = [*(model.ops.include if model.ops else []), *(model.generate.ops if model.generate else [])]
            names_dtype = bool(tid.dtypes) and all(d in named_dtypes for d in tid.dtypes)
            names_op = op is not None and any(op_matches(x, op) for x in named_ops)
        if not names_op and (found := config.unsupported_op(op)) is not None:
            return found
        if not names_dtype:
            return config.unsupported_dtype(tid.dtypes, None if names_op else op)
        return None

    def generated_variants(self, file_path: str, class_name: str | None, method: str) -> tuple[list[str], list[str]]:
        """(dtypes, ops) that entries naming this generic test ask the test base to generate."""
        dtypes: list[str] = []
        ops: list[str] = []
        class_base = ids.strip_class_suffix(class_name) if class_name else None
        for section in self.sections_for(file_path):
            for entry in section.entries:
                generate = entry.model.generate
                if generate and any(p.matches(class_base, method) for p, _ in entry.patterns):
                    dtypes += [d for d in generate.dtypes if d not in dtypes]
                    ops += [o for o in generate.ops if o not in ops]
        return dtypes, ops

    def stale(self, collected_ids: Iterable[str | tuple[str, str | None]], *,
              torch_version: str | None = None) -> list[StaleEntry]:
        """Entries that name nothing in a collected upstream tree.

        ``collected_ids`` are instantiated ids, or (id, OpInfo name) pairs when the op is known.
        With ``torch_version``, entries whose ``when`` excludes it are not checked; without it,
        version conditions are ignored.
        """
        collected: list[tuple[ids.TestId, str | None]] = []
        for item in collected_ids:
            test_id, op = (item, None) if isinstance(item, str) else item
            collected.append((ids.parse(test_id), op))
        version = parse_torch_version(torch_version) if torch_version else None
        out: list[StaleEntry] = []
        for section in self.sections:
            in_file = [(tid, op) for tid, op in collected if path_covers(section.path, tid.file)]
            if not in_file:
                out.append(StaleEntry(section.ref, "file", section.path,
                                      f"no collected test is in {section.path}", section.path))
                continue
            for entry in section.entries:
                if version is not None and entry.specifier is not None \
                        and not entry.specifier.contains(version, prereleases=True):
                    continue
                out.extend(self._stale_patterns(entry, in_file, section.path))
        return out

    @staticmethod
    def _stale_patterns(entry: CompiledEntry, in_file: list[tuple[ids.TestId, str | None]],
                        path: str) -> list[StaleEntry]:
        out = []
        for pattern, ref in entry.patterns:
            named = [(tid, op, used) for tid, op in in_file
                     for hit, used in entry.name_hits(tid, op) if hit is pattern]
            if not named:
                out.append(StaleEntry(ref, "pattern", pattern.text,
                                      f"{pattern.text} matches no collected test", path))
            elif not any(entry.filters_pass(tid, pattern, used, None) for tid, _, used in named):
                out.append(StaleEntry(ref, "filters", pattern.text,
                                      f"{pattern.text} names {len(named)} collected test(s) but its "
                                      "dtype/op filters exclude all of them", path))
        return out

    def conflicts(self, collected_ids: Iterable[str | tuple[str, str | None]] | None = None, *,
                  torch_version: str | None = None) -> list[Conflict]:
        """Entries that clash.

        Without ids: sections for one path with different ``unlisted_test_mode``, and entries with
        the same pattern and the same filters (different modes: conflict; same mode: duplicate).
        With collected ids: also every test where the two most specific applicable entries tie
        with different modes.
        """
        out = self._static_conflicts()
        if collected_ids is None:
            return out
        version = parse_torch_version(torch_version)
        seen: set[tuple[str, ...]] = {c.refs for c in out}
        for item in collected_ids:
            test_id, op = (item, None) if isinstance(item, str) else item
            tid = ids.parse(test_id)
            hits = [h for s in self.sections_for(tid.file) for e in s.entries
                    if (h := e.hit(tid, op, version)) is not None]
            if len(hits) < 2:
                continue
            top = max(h.specificity for h in hits)
            tied = [h for h in hits if h.specificity == top]
            modes = {h.entry.model.mode for h in tied}
            refs = tuple(h.entry.ref for h in tied)
            if len(modes) > 1 and refs not in seen:
                seen.add(refs)
                out.append(Conflict("conflict", tid.normalised, refs,
                                    tuple(h.entry.model.mode.value for h in tied)))
        return out

    def _static_conflicts(self) -> list[Conflict]:
        out: list[Conflict] = []
        by_path: dict[str, list[FileSection]] = {}
        for section in self.sections:
            by_path.setdefault(section.path, []).append(section)
        for path, sections in by_path.items():
            if len({s.unlisted_test_mode for s in sections}) > 1:
                out.append(Conflict("conflict", f"unlisted_test_mode of {path}", tuple(s.ref for s in sections),
                                    tuple(s.unlisted_test_mode.value for s in sections)))
            groups: dict[tuple, list[tuple[CompiledEntry, str]]] = {}
            for section in sections:
                for entry in section.entries:
                    for pattern, ref in entry.patterns:
                        groups.setdefault(_same_tests_key(entry, pattern), []).append((entry, ref))
            for key, members in groups.items():
                if len(members) < 2:
                    continue
                modes = tuple(e.model.mode.value for e, _ in members)
                kind = "conflict" if len(set(modes)) > 1 else "duplicate"
                out.append(Conflict(kind, key[0],
                                    tuple(ref for _, ref in members), modes))
        return out


def _same_tests_key(entry: CompiledEntry, pattern: NamePattern) -> tuple:
    """Two entries with equal keys name exactly the same tests under the same conditions."""
    model = entry.model
    if pattern.method is not None:
        name = f"{pattern.class_name}::{pattern.method}" if pattern.class_name else pattern.method
    else:
        name = pattern.text
    return (
        name,
        pattern.dtypes,
        (tuple(sorted(model.dtypes.include)), tuple(sorted(model.dtypes.exclude))) if model.dtypes else None,
        (tuple(sorted(model.ops.include)), tuple(sorted(model.ops.exclude))) if model.ops else None,
        str(SpecifierSet(model.when.torch)) if model.when else None,
    )
