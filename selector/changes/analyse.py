"""Stage 1: from an upstream diff to candidate test functions, each with its reasons."""
from __future__ import annotations

import bisect
import hashlib

from selector.changes.book import CandidateBook
from selector.changes.classify import classify
from selector.changes.data_files import data_file_readers, has_parser, is_data_file, same_content
from selector.changes.dynamic import conservative
from selector.changes.functions import FilePair, diff_helper_modules, diff_test_files, module_definitions_changed
from selector.changes.native_yaml import changed_ops
from selector.changes.op_impact import OpIndex
from selector.changes.op_sources import changed_definitions, op_names, scan_op_source, what_it_is
from selector.changes.opinfo import OpInfoFile, covering_tests, diff_entries, scan_opinfo
from selector.changes.report import ChangeReport, FileChange, RemovedTest
from selector.changes.star import mirror_star_copies, module_code_changed
from selector.changes.yaml_items import item_starts
from selector.gc_pause import without_gc_pauses
from selector.hunks import Hunk, hunk_for, hunks
from selector.inventory.cache import cached, cached_change, cached_key, open_cache
from selector.inventory.model import Inventory
from selector.inventory.scan import ScanRequest, code_digest, module_name, scan_file, scan_tree, scan_trees
from selector.inventory.star import star_copies, with_star_imports
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
    readable = [f for f in files if f.kind in PYTHON_KINDS or f.kind in YAML_KEYS or f.kind == "op_source"]
    old_texts = source.read_files(from_sha, [f.old_path or f.path for f in readable if f.status != "added"])
    new_texts = source.read_files(to_sha, [f.path for f in readable if f.status != "deleted"])
    book = CandidateBook()

    pairs: dict[str, list[FilePair]] = {"test_file": [], "test_helper": []}
    python = [f for f in readable if f.kind in pairs and old_texts.get(f.before_path) is not None]
    # one `git diff -U0` for every file stage 1 reads; difflib only for sources that cannot diff
    # and every other changed Python or YAML file: the agent stage reads the same hunks (report.hunks)
    diffed = readable + [f for f in files if f.path.endswith(DIFFED_SUFFIXES)]
    pending_hunks = source.start_diff_hunks(from_sha, to_sha, sorted({p for f in diffed for p in (f.before_path, f.path)}))
    opinfo = [f for f in readable if f.kind == "opinfo" and not f.binary]
    judged = _no_op_judged(files, rules)
    # every file stage 1 parses, in one pass over both cores (see scan_trees)
    to_tree, old_scans, helper_scans, old_digests, new_digests, *opinfo_scans = scan_trees(source, [
        ScanRequest(to_sha),
        ScanRequest(from_sha, [f.before_path for f in python]),
        ScanRequest(to_sha, [f.path for f in readable if f.kind == "test_helper" and f.status != "deleted"]),
        ScanRequest(from_sha, [f.before_path for f in judged], "code", _code_digest),
        ScanRequest(to_sha, [f.path for f in judged], "code", _code_digest),
        ScanRequest(from_sha, [f.before_path for f in opinfo if f.status != "added"], "opinfo", _scan_opinfo),
        # an op's source or YAML entry changed: the op index reads every OpInfo file at the to-ref
        ScanRequest(to_sha, [p for p in source.list_files(to_sha) if classify(p) == "opinfo"]
                    if any(f.kind in YAML_KEYS or f.kind == "op_source" for f in readable)
                    else [f.path for f in opinfo if f.status != "deleted"], "opinfo", _scan_opinfo),
    ], cache_dir=cache_dir, texts={from_sha: old_texts, to_sha: new_texts})
    report.inventory_to = inventory = Inventory(sha=to_sha, files=to_tree)
    report.hunks = bulk_hunks = pending_hunks() or {}  # git diffed while the files were scanned
    cache = open_cache(source, cache_dir)

    def opinfo_scan(sha: str, path: str, text: str | None) -> OpInfoFile:
        scanned = opinfo_scans[sha == to_sha].get(path)
        return scanned if scanned is not None else \
            cached(cache, source, sha, "opinfo", path, lambda: scan_opinfo(path, text))

    def opinfo_entries() -> list:  # every OpInfo entry at the to-ref: who tests an op a source change touches
        paths = [p for p in source.list_files(to_sha) if classify(p) == "opinfo"]
        texts = source.read_files(to_sha, [p for p in paths if p not in opinfo_scans[True]])  # the others are scanned
        return [e for p in paths for e in opinfo_scan(to_sha, p, texts.get(p)).entries.values()]
    index = OpIndex(inventory, opinfo_entries, lambda paths: source.read_files(to_sha, paths),
                    lambda name, compute: cached_key(cache, "qualified-name", to_sha, name, compute))
    data_ops: dict[str, list[str]] = {}  # the ops a changed YAML file's entries declare (for its readers)
    for change in [f for f in readable if not f.binary]:
        before = old_texts.get(change.old_path or change.path)
        after = new_texts.get(change.path)
        if before is None and after is None or (change.status == "modified" and (before is None or after is None)):
            change.binary = True
            continue
        if change.kind in pairs:
            old_inv = old_scans.get(change.before_path)
            new_inv = (to_tree if change.kind == "test_file" else helper_scans).get(change.path)
            if new_inv is None and after is not None:
                new_inv = scan_file(change.path, after)
            pairs[change.kind].append(FilePair(change, old_inv, new_inv, before, after,
                                               _known(bulk_hunks, change.path)))
        elif change.kind == "opinfo":
            found = _known(bulk_hunks, change.path) or hunks(before, after)
            old = opinfo_scan(from_sha, change.before_path, before) if before is not None else scan_opinfo("", None)
            new = opinfo_scan(to_sha, change.path, after) if after is not None else scan_opinfo("", None)
            _opinfo_change(change, old, new, found, inventory, book, report)
        elif change.kind in YAML_KEYS:
            found = _known(bulk_hunks, change.path) or hunks(before, after)
            key = YAML_KEYS[change.kind]
            ops = cached_change(cache, source, f"yaml-{key}", (from_sha, change.before_path), (to_sha, change.path),
                                lambda before=before, after=after, key=key: changed_ops(before, after, key))
            data_ops[change.path] = _yaml_change(change, ops, found, index, book, report,
                                                 (item_starts(before), item_starts(after)))
        if change.kind == "op_source":
            found = _known(bulk_hunks, change.path) or hunks(before, after)
            sides = [cached(cache, source, sha, "opsource", path, lambda text=text, path=path: scan_op_source(path, text))
                     if text is not None else scan_op_source(path, None)
                     for sha, path, text in ((from_sha, change.before_path, before), (to_sha, change.path, after))]
            _op_source_change(change, *sides, found, index, book, report)
    diff_test_files(pairs["test_file"], book, report.removed, report.ignored, report.errors, to_ref, from_ref)
    diff_helper_modules(pairs["test_helper"], inventory, book, report.errors,
                        _module_loader(source, to_sha, {f.path for f in files}, cache_dir))
    first_hunk = lambda f: _first_hunk(source, from_sha, to_sha, f, bulk_hunks)  # noqa: E731
    conservative(inventory, _changed_modules(files, first_hunk), book,
                 star_only={module_name(p.change.path): Evidence(file=p.change.path, hunk=first_hunk(p.change),
                                                                 detail=f"{module_name(p.change.path)} changed")
                            for p in pairs["test_file"] if module_definitions_changed(p)})
    data = [f for f in files if is_data_file(f.path) and not f.symlink]
    parsed = {f.path for f in data if has_parser(f.path) and f.status == "modified" and not f.binary}
    readers = [f for f in data if f.path not in parsed or not _same_data(source, cache, from_sha, to_sha, f)]
    data_file_readers(readers, inventory, _texts_naming(source, cache, to_sha, [f.path for f in readers]), book,
                      lambda f: _first_hunk(source, from_sha, to_sha, f, bulk_hunks), data_ops)
    for change in judged:
        digests = old_digests.get(change.before_path), new_digests.get(change.path)
        change.no_op = digests[0] is not None and digests[0] == digests[1]
    if rules is not None:
        _relevance(rules, files, inventory, book, lambda f: _first_hunk(source, from_sha, to_sha, f, bulk_hunks))
    copies = star_copies(to_tree)  # tests a file runs through `from test_x import *`: the origin's reasons
    mirror_star_copies(copies, book, report.removed, to_tree, {
        p.change.path: Evidence(file=p.change.path, hunk=first_hunk(p.change)) for p in pairs["test_file"]
        if p.change.path in copies and module_code_changed(p.old_text, p.new_text)})
    report.inventory_to = Inventory(sha=to_sha, files=with_star_imports(to_tree, copies))
    report.candidates = book.candidates()
    report.removed.sort(key=lambda r: (r.test_id, r.op or ""))
    report.ignored.sort(key=lambda i: i.test_id)
    return report


def _same_data(source: UpstreamSource, cache, from_sha: str, to_sha: str, change: FileChange) -> bool:
    """Whether a changed data file parses to the same data (kept per pair of blobs: parsing both
    sides of native_functions.yaml costs about a second)."""
    def compute() -> bool:
        return same_content(change.path, source.read_file(from_sha, change.before_path),
                            source.read_file(to_sha, change.path))
    return cached_change(cache, source, "same-data", (from_sha, change.before_path), (to_sha, change.path), compute)


def _texts_naming(source: UpstreamSource, cache, sha: str, names: list[str]):
    """``read(paths)`` for data_file_readers: the texts at ``sha`` of the files that contain one of
    ``names`` (the others cannot name a changed data file). Which files those are is kept per
    commit, names and paths, so a second run reads a handful of files instead of the whole test tree."""
    def read(paths: list[str]) -> dict[str, str | None]:
        key = hashlib.blake2b("\0".join([sha, *sorted(names), "", *paths]).encode("utf-8", "surrogateescape"),
                              digest_size=12).hexdigest()
        texts: dict[str, str | None] = {}

        def naming() -> list[str]:
            texts.update(source.read_files(sha, paths))
            return [p for p, text in texts.items() if text and any(n in text for n in names)]
        found = cached_key(cache, "naming-files", key, "", naming)
        return texts or source.read_files(sha, found)
    return read


def _scan_opinfo(path: str, text: str, _memo) -> OpInfoFile:
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
            lo, hi = (new.function_lines.get(entry.via[0]) if entry.via else None) or (entry.lineno, entry.end_lineno)
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


def _yaml_change(change: FileChange, changed: tuple[dict, list[str]], found: list[Hunk], index: OpIndex, book: CandidateBook,
                 report: ChangeReport, starts: tuple[list[int], list[int]]) -> list[str]:
    """Select the tests of the ops whose entries changed (``changed_ops``); returns those ops."""
    ops, errors = changed
    for error in errors:
        change.error = f"YAML error: {error}"
        report.errors.append(f"{change.path}: {change.error}; only relevance rules apply to it")
    for op, (how, line) in sorted(ops.items()):
        change.details.append(f"{how}")
        side = "old" if how.endswith(" removed") else "new"
        following = starts[side == "new"][bisect.bisect_right(starts[side == "new"], line):]
        end = following[0] - 1 if following else line + 50  # the whole entry: its change may be lines below `func:`
        hunk = hunk_for(found, line, end, side=side)
        detail = f"{change.path.rsplit('/', 1)[-1]} entry {how} (op {op})"

        def evidence(label, hunk=hunk, line=line, detail=detail):
            return Evidence(file=change.path, hunk=hunk, line=line, op=label, detail=detail)
        index.select([op], book, evidence)
    return sorted(ops)


def _op_source_change(change: FileChange, old, new, found: list[Hunk], index: OpIndex, book: CandidateBook,
                      report: ChangeReport) -> None:
    """A changed reference, decomposition or Python implementation selects the tests of its ops."""
    if old.error or new.error:
        change.error = f"syntax error: {old.error or new.error}"
        report.errors.append(f"{change.path}: {change.error}; its ops cannot be told, only relevance rules apply")
        return
    what = what_it_is(change.path)
    for name, (definition, via) in sorted(changed_definitions(old, new).items()):
        ops = op_names(change.path, definition)
        if not ops:
            continue
        gone = name not in new.definitions
        root = old.definitions.get(via) or new.definitions.get(via) if via else definition
        side = "old" if gone or (via and via not in new.definitions) else "new"
        hunk = hunk_for(found, root.lineno, root.end_lineno, side=side)
        through = f" through changed {via}" if via else ""
        how = "removed" if gone else "added" if name not in old.definitions else "changed"
        detail = f"{what} `{name}` of {', '.join(ops)} {how}{through}"
        change.details.append(detail)

        def evidence(label, hunk=hunk, line=root.lineno, detail=detail):
            return Evidence(file=change.path, hunk=hunk, line=line, op=label, detail=detail)
        index.select(ops, book, evidence)


def _module_loader(source: UpstreamSource, sha: str, changed_paths: set[str], cache_dir):
    """Loads, on demand, the unchanged helper modules at ``sha`` that may call given helpers
    (returns every module loaded so far).

    A module can call ``B.name`` only if its text mentions B's last dotted part and ``name``: that
    test on the raw text keeps a release-sized tree from being scanned whole."""
    texts: dict[str, str] = {}
    done: set[str] = set()
    scanned: dict = {}  # every module loaded so far: callers ask again with other names

    def load(wanted: dict[str, set[str]]) -> dict:
        if not texts:
            paths = [p for p in source.list_files(sha) if classify(p) == "test_helper" and p not in changed_paths]
            texts.update({p: t for p, t in source.read_files(sha, paths).items() if t is not None})
        chosen = [p for p, text in texts.items() if p not in done
                  and any(module.rsplit(".", 1)[-1] in text and any(n in text for n in names)
                         for module, names in wanted.items())]
        done.update(chosen)
        if chosen:
            scanned.update(scan_tree(source, sha, chosen, cache_dir=cache_dir).files)
        return dict(scanned)
    return load


DEFINITION_KINDS = ("test_helper", "op_source", "opinfo")  # kinds whose changed definitions stage 1 lists


def _changed_modules(files: list[FileChange], hunk_of) -> dict[str, Evidence]:
    """Python modules this diff changed (for helpers and op sources: in a definition), by import name."""
    out: dict[str, Evidence] = {}
    for change in files:
        if not change.path.endswith(".py") or change.binary:
            continue
        if change.kind in DEFINITION_KINDS and not (change.details or change.error) or \
                change.kind not in DEFINITION_KINDS + ("torch_python",):
            continue
        out[module_name(change.path)] = Evidence(file=change.path, hunk=hunk_of(change),
                                                 detail=f"{module_name(change.path)} changed")
    return out


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


NO_OP_KINDS = ("op_source", "opinfo", "torch_python")  # Python outside the test tree (tests: diffed by AST)


def _no_op_judged(files: list[FileChange], rules) -> list[FileChange]:
    """The Python sources outside the test tree whose edit may change no code (comments, docstrings,
    formatting): the op sources and OpInfo files stage 1 reads anyway, and the files a relevance
    rule covers (parsing every changed torch/ file of a release costs seconds)."""
    return [f for f in files if f.status == "modified" and f.kind in NO_OP_KINDS and not f.binary and not f.symlink
            and (f.kind != "torch_python" or rules is not None and rules.relevance.targets_for(f.path))]


def _code_digest(_path: str, text: str, _memo) -> str | None:
    """A ``scan_trees`` scanner: digests are kept per blob, and computed beside the other scans
    (both sides of a 20k-line OpInfo file take about a second)."""
    return code_digest(text)


def _relevance(rules, files: list[FileChange], inventory: Inventory, book: CandidateBook, hunk_of) -> None:
    from testdefs.matching import NamePattern, op_matches, path_covers

    def expand(pattern: str):
        file_glob, _, name = pattern.partition("::")
        compiled = NamePattern.compile(name) if name else None
        for path, test in inventory.tests():
            if path_covers(file_glob, path) and (compiled is None or compiled.matches(test.class_name, test.name)):
                yield path, test

    for change in files:
        hits = [] if change.no_op else rules.relevance.targets_for(change.path)
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
