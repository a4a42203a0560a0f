"""Stage 1: from an upstream diff to candidate test functions, each with its reasons."""
from __future__ import annotations

from selector.changes.book import CandidateBook
from selector.changes.classify import classify
from selector.changes.functions import FilePair, diff_helper_modules, diff_test_files
from selector.changes.native_yaml import changed_ops, op_entries
from selector.changes.opinfo import OpInfoFile, covering_tests, diff_entries, scan_opinfo, test_covers_op
from selector.changes.report import ChangeReport, FileChange, RemovedTest
from selector.gc_pause import without_gc_pauses
from selector.hunks import Hunk, hunk_for, hunks
from selector.inventory.cache import cached, open_cache
from selector.inventory.model import Inventory
from selector.inventory.scan import ScanRequest, scan_file, scan_trees
from selector.model import Evidence
from selector.upstream.base import UpstreamSource

PYTHON_KINDS = ("test_file", "test_helper", "opinfo")
YAML_KEYS = {"native_functions": "func", "derivatives": "name"}
SYMLINK_MODE = "120000"
DIFFED_SUFFIXES = (".py", ".yaml")


@without_gc_pauses
def analyse(source: UpstreamSource, from_ref: str, to_ref: str, *, rules=None) -> ChangeReport:
    """Diff ``from_ref``..``to_ref`` of ``source`` and name every test function the change can affect.

    ``rules`` is a testdefs RuleSet; its relevance section maps source paths to tests and ops.
    """
    from_sha, to_sha = source.resolve(from_ref), source.resolve(to_ref)
    report = ChangeReport(from_ref=from_ref, to_ref=to_ref, from_sha=from_sha, to_sha=to_sha)
    changes = source.changed_files(from_sha, to_sha)
    cache_dir = getattr(source, "cache_dir", None)  # git sources keep scanned files by blob id
    files = [FileChange(path=c.path, status=c.status, kind=classify(c.path), old_path=c.old_path,
                        symlink=SYMLINK_MODE in (c.old_mode, c.new_mode), binary=bool(c.binary)) for c in changes]
    report.files = files
    readable = [f for f in files if f.kind in PYTHON_KINDS or f.kind in YAML_KEYS]
    old_texts = source.read_files(from_sha, [f.old_path or f.path for f in readable if f.status != "added"])
    new_texts = source.read_files(to_sha, [f.path for f in readable if f.status != "deleted"])
    book = CandidateBook()

    pairs: dict[str, list[FilePair]] = {"test_file": [], "test_helper": []}
    python = [f for f in readable if f.kind in pairs and old_texts.get(f.before_path) is not None]
    # one `git diff -U0` for every file stage 1 reads; difflib only for sources that cannot diff
    # and every other changed Python or YAML file: the agent stage reads the same hunks (report.hunks)
    diffed = readable + [f for f in files if f.path.endswith(DIFFED_SUFFIXES)]
    bulk_hunks = source.diff_hunks(from_sha, to_sha, sorted({p for f in diffed for p in (f.before_path, f.path)}))
    report.hunks = bulk_hunks or {}
    opinfo = [f for f in readable if f.kind == "opinfo" and not f.binary]
    # every file stage 1 parses, in one pass over both cores (see scan_trees)
    to_tree, old_scans, helper_scans, *opinfo_scans = scan_trees(source, [
        ScanRequest(to_sha),
        ScanRequest(from_sha, [f.before_path for f in python]),
        ScanRequest(to_sha, [f.path for f in readable if f.kind == "test_helper" and f.status != "deleted"]),
        ScanRequest(from_sha, [f.before_path for f in opinfo if f.status != "added"], "opinfo", _scan_opinfo),
        ScanRequest(to_sha, [f.path for f in opinfo if f.status != "deleted"], "opinfo", _scan_opinfo),
    ], cache_dir=cache_dir)
    report.inventory_to = inventory = Inventory(sha=to_sha, files=to_tree)
    cache = open_cache(source, cache_dir)

    def opinfo_scan(sha: str, path: str, text: str | None) -> OpInfoFile:
        scanned = opinfo_scans[sha == to_sha].get(path)
        return scanned if scanned is not None else \
            cached(cache, source, sha, "opinfo", path, lambda: scan_opinfo(path, text))
    for change in [f for f in readable if not f.binary]:
        before = old_texts.get(change.old_path or change.path)
        after = new_texts.get(change.path)
        if before is None and after is None or (change.status == "modified" and (before is None or after is None)):
            change.binary = True
            continue
        if change.kind in pairs:
            old_inv = old_scans.get(change.before_path)
            new_inv = (inventory.files if change.kind == "test_file" else helper_scans).get(change.path)
            if new_inv is None and after is not None:
                new_inv = scan_file(change.path, after)
            pairs[change.kind].append(FilePair(change, old_inv, new_inv, before, after,
                                               _known(bulk_hunks, change.path)))
        elif change.kind == "opinfo":
            found = _known(bulk_hunks, change.path) or hunks(before, after)
            old = opinfo_scan(from_sha, change.before_path, before) if before is not None else scan_opinfo("", None)
            new = opinfo_scan(to_sha, change.path, after) if after is not None else scan_opinfo("", None)
            _opinfo_change(change, old, new, found, inventory, book, report)
        else:
            found = _known(bulk_hunks, change.path) or hunks(before, after)
            key = YAML_KEYS[change.kind]
            ops = (cached(cache, source, from_sha, "yaml", change.before_path, lambda text=before, k=key: op_entries(text, k))
                   if before is not None else ({}, None),
                   cached(cache, source, to_sha, "yaml", change.path, lambda text=after, k=key: op_entries(text, k))
                   if after is not None else ({}, None))
            _yaml_change(change, ops, found, inventory, book, report)
    diff_test_files(pairs["test_file"], book, report.removed, report.ignored, report.errors, to_ref, from_ref)
    diff_helper_modules(pairs["test_helper"], inventory, book, report.errors)
    if rules is not None:
        _relevance(rules, files, inventory, book, lambda f: _first_hunk(source, from_sha, to_sha, f, bulk_hunks))
    report.candidates = book.candidates()
    report.removed.sort(key=lambda r: (r.test_id, r.op or ""))
    report.ignored.sort(key=lambda i: i.test_id)
    return report


def _scan_opinfo(path: str, text: str, _code_memo: dict) -> OpInfoFile:
    return scan_opinfo(path, text)


def _known(bulk: dict[str, list[Hunk]] | None, path: str) -> list[Hunk] | None:
    return None if bulk is None else bulk.get(path)


def _opinfo_change(change: FileChange, old: OpInfoFile, new: OpInfoFile, found: list[Hunk], inventory: Inventory,
                   book: CandidateBook, report: ChangeReport) -> None:
    if old.error or new.error:
        change.error = f"syntax error: {old.error or new.error}"
        report.errors.append(f"{change.path}: {change.error}; every @ops test is a candidate")
        for path, test in inventory.tests():
            if test.ops is not None:
                book.add(path, test, "opinfo", Evidence(file=change.path, detail="OpInfo file does not parse"))
        return
    diff = diff_entries(old, new)
    for how in ("added", "modified"):
        for entry in diff[how]:
            change.details.append(f"OpInfo entry {entry.label} {how}")
            lo, hi = new.function_lines.get(entry.via[0]) if entry.via else (entry.lineno, entry.end_lineno)
            via = f" through {', '.join(entry.via)}" if entry.via else ""
            evidence = Evidence(file=change.path, hunk=hunk_for(found, lo, hi), line=lo, op=entry.label,
                                detail=f"OpInfo entry {entry.label} {how}{via}")
            book.add_many(covering_tests(inventory, entry.name, entry.info_class), "opinfo", evidence, op=entry.label)
    for entry in diff["removed"]:
        change.details.append(f"OpInfo entry {entry.label} removed")
        evidence = Evidence(file=change.old_path or change.path, line=entry.lineno, op=entry.label,
                            hunk=hunk_for(found, entry.lineno, entry.end_lineno, side="old"),
                            detail=f"OpInfo entry {entry.label} removed")
        for path, test in covering_tests(inventory, entry.name, entry.info_class):
            report.removed.append(RemovedTest(test.test_id(path), f"variants of {entry.label} no longer generated",
                                              evidence, op=entry.label))


def _yaml_change(change: FileChange, entries, found: list[Hunk], inventory: Inventory, book: CandidateBook,
                 report: ChangeReport) -> None:
    ops, errors = changed_ops(*entries)
    for error in errors:
        change.error = f"YAML error: {error}"
        report.errors.append(f"{change.path}: {change.error}; only relevance rules apply to it")
    for op, (how, line) in sorted(ops.items()):
        change.details.append(f"{how}")
        evidence = Evidence(file=change.path, hunk=hunk_for(found, line, line + 1), line=line, op=op,
                            detail=f"{change.kind.replace('_', ' ')} entry {how}")
        for path, test in inventory.op_tests():
            if test_covers_op([o for o in test.ops if not o.startswith("@")], op):
                book.add(path, test, "source", evidence, op=op)


def _first_hunk(source: UpstreamSource, from_sha: str, to_sha: str, change: FileChange, bulk) -> str | None:
    if change.binary:
        return None
    known = _known(bulk, change.path)
    if known:
        return known[0].header
    before = source.read_file(from_sha, change.before_path) if change.status != "added" else None
    after = source.read_file(to_sha, change.path) if change.status != "deleted" else None
    found = hunks(before, after)
    return found[0].header if found else None


def _relevance(rules, files: list[FileChange], inventory: Inventory, book: CandidateBook, hunk_of) -> None:
    from testdefs.matching import NamePattern, op_matches, path_covers

    def expand(pattern: str):
        file_glob, _, name = pattern.partition("::")
        compiled = NamePattern.compile(name) if name else None
        for path, test in inventory.tests():
            if path_covers(file_glob, path) and (compiled is None or compiled.matches(test.class_name, test.name)):
                yield path, test

    for change in files:
        hits = rules.relevance.targets_for(change.path)
        hunk = hunk_of(change) if hits else None
        for hit in hits:
            evidence = Evidence(file=change.path, hunk=hunk, rule=hit.rule, detail=f"relevance rule: {hit.source}")
            for pattern in hit.tests:
                for path, test in expand(pattern):
                    book.add(path, test, "source", evidence)
            for op in hit.ops:
                for path, test in inventory.tests():
                    if test.ops is not None and ("*" in test.ops or any(op_matches(op, t) or op_matches(t, op)
                                                                        for t in test.ops)):
                        book.add(path, test, "source", evidence.model_copy(update={"op": op}), op=op)
    for pattern, ref in rules.relevance.always_run_refs:
        for path, test in expand(pattern):
            book.add(path, test, "always", Evidence(rule=ref, detail="always-run rule"))
