"""Function-level diff of test files and test helpers.

Tests are compared by normalised AST fingerprints, so formatting-only and comment- or
docstring-only edits select nothing (they are listed as ignored). Helper and class-level
changes (decorators, attributes, setUp, instantiate_device_type_tests) reach every test
that uses them.
"""
from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from selector.changes import parametrize
from selector.changes.book import CandidateBook
from selector.changes.report import FileChange, IgnoredTest, RemovedTest
from selector.hunks import Hunk, hunk_for, hunks
from selector.inventory.model import ALL_OPS, FileInventory, Inventory, TestFunction
from selector.inventory.scan import module_name, strip_docstrings
from selector.model import Evidence

CLASS_WIDE = ("setUp", "tearDown", "setUpClass", "tearDownClass", "_setUp", "run")
# Methods that run whenever a class is used at all (built, entered as a context, called): a change
# to one changes the class for every user, not only for callers of that method.
ON_USE = ("__init__", "__new__", "__post_init__", "__enter__", "__exit__", "__call__", "__init_subclass__")
WHOLE_CLASS = CLASS_WIDE + ON_USE  # a change to one of these changes the class for every test using it
# Said of a changed setUp-like method. It runs on every device before the test body, so before a
# device-type skip such as @onlyCPU (raised inside the test): stage 2 keeps such a test on spyre.
BEFORE_SKIPS = "it runs before every test of the class, device skips such as @onlyCPU included"
# Said of a shared base class whose header changed: every subclass and its tests inherit it.
HEADER_CAUSE = "its decorators, bases or class-level statements changed, which every test inherits"


@dataclass
class FilePair:
    change: FileChange
    old: FileInventory | None  # None when the file is new
    new: FileInventory | None  # None when the file is gone
    old_text: str | None
    new_text: str | None
    known_hunks: list[Hunk] | None = None  # from the source's bulk diff, when it has one

    def diff(self) -> list[Hunk]:
        if self.known_hunks is None:
            self.known_hunks = hunks(self.old_text, self.new_text)
        return self.known_hunks

    def segment(self, side: str, test: TestFunction) -> list[str]:
        """The lines of ``test`` in the old or new text (split once per file)."""
        return self.lines(side)[test.lineno - 1:test.end_lineno]

    def module_classes(self, side: str) -> dict[str, ast.ClassDef]:
        """The module-level classes of the old or new text by name (the first of a name), parsed
        once: a file with many subclasses of a changed base class asks for each."""
        attr = f"_{side}_classes"
        if not hasattr(self, attr):
            classes: dict[str, ast.ClassDef] = {}
            for node in ast.parse((self.old_text if side == "old" else self.new_text) or "").body:
                if isinstance(node, ast.ClassDef):
                    classes.setdefault(node.name, node)
            setattr(self, attr, classes)
        return getattr(self, attr)

    def lines(self, side: str) -> list[str]:
        attr = f"_{side}_lines"
        if not hasattr(self, attr):
            setattr(self, attr, ((self.old_text if side == "old" else self.new_text) or "").splitlines())
        return getattr(self, attr)


def _closure(changed: set[str], uses: dict[str, list[str]]) -> set[str]:
    """Everything that is changed or calls (transitively) something changed."""
    out = set(changed)
    grew = True
    while grew:
        grew = False
        for name, used in uses.items():
            if name not in out and out.intersection(used):
                out.add(name)
                grew = True
    return out


def _changed(old: dict[str, str], new: dict[str, str]) -> set[str]:
    return {name for name in set(old) | set(new) if old.get(name) != new.get(name)}


def diff_test_files(pairs: list[FilePair], book: CandidateBook, removed: list[RemovedTest],
                    ignored: list[IgnoredTest], errors: list[str], to_ref: str, from_ref: str) -> None:
    old_tests: dict[tuple, tuple[TestFunction, FilePair]] = {}
    new_tests: dict[tuple, tuple[TestFunction, FilePair]] = {}
    for pair in pairs:
        path, fc = pair.change.path, pair.change
        if pair.new is not None and pair.new.error:
            fc.error = f"syntax error at {to_ref}: {pair.new.error}"
            errors.append(f"{path}: {fc.error}; its tests cannot be analysed or run")
            continue
        if pair.old is not None and pair.old.error and pair.new is not None:
            fc.error = f"syntax error at {from_ref}: {pair.old.error}"
            errors.append(f"{path}: {fc.error}; every test in it is a candidate")
            for test in pair.new.all_tests():
                book.add(path, test, "modified", Evidence(file=path, detail=f"file did not parse at {from_ref}"))
            continue
        if pair.old is not None:
            for test in pair.old.all_tests():
                old_tests[(fc.before_path, test.class_name or "", test.name)] = (test, pair)
        if pair.new is not None:
            for test in pair.new.all_tests():
                new_tests[(path, test.class_name or "", test.name)] = (test, pair)
            if pair.old is not None:
                _class_and_helper_changes(pair, book)

    old_only = {k: v for k, v in old_tests.items() if k not in new_tests}
    matches = _Pairing(old_tests, new_tests, pairs).pair(old_only, [k for k in new_tests if k not in old_tests])
    for key in sorted(new_tests):
        test, pair = new_tests[key]
        path = pair.change.path
        if key in old_tests:
            before, before_pair = old_tests[key]
            delta = op_list_delta(before, before_pair, test, pair)
            if delta is not None:
                _op_list_change(path, test, pair, delta, book, removed)
            elif before.fingerprint != test.fingerprint and _other_devices_only(before, before_pair, test, pair):
                ignored.append(IgnoredTest(test.test_id(path), "only decorators for other devices changed "
                                           "(dtypesIfCUDA, skipCUDAIf, ...)", _evidence(pair, test, "").hunk))
            elif before.fingerprint != test.fingerprint:
                book.add(path, test, "modified", _evidence(pair, test, _modified_detail(before, before_pair, test, pair)))
            elif (before.ops, before.dtypes) != (test.ops, test.dtypes):
                book.add(path, test, "modified", _evidence(pair, test, "its @ops/@dtypes lists changed"))
            elif before_pair.segment("old", before) != pair.segment("new", test):
                ignored.append(IgnoredTest(test.test_id(path), "formatting-, comment- or docstring-only change",
                                           hunk_for(pair.diff(), test.lineno, test.end_lineno)))
            continue
        match = matches.get(key)
        if match is None:
            book.add(path, test, "added", _evidence(pair, test, "new test"))
            continue
        old_key, how = match
        before, before_pair = old_only.pop(old_key)
        was = before.test_id(old_key[0])
        detail = f"{how} from {was}" + ("" if before.fingerprint == test.fingerprint else " and modified")
        book.add(path, test, how, _evidence(pair, test, detail), previous_id=was)
    for key in sorted(old_only):
        before, pair = old_only[key]
        hunk = hunk_for(pair.diff(), before.lineno, before.end_lineno, side="old")
        why = "file deleted" if pair.new is None else "test removed"
        removed.append(RemovedTest(before.test_id(key[0]), why,
                                   Evidence(file=pair.change.before_path, hunk=hunk, line=before.lineno, detail=why)))


def module_definitions_changed(pair: FilePair) -> bool:
    """Whether a test file's module-level helpers or data, or a class's header or helper methods,
    changed: what another file's code can read through ``from this_file import *``."""
    if pair.old is None or pair.new is None or pair.old.error or pair.new.error:
        return pair.old is not None or pair.new is not None

    def shape(inv: FileInventory) -> dict[str, str]:
        return {h.name: h.fingerprint for h in inv.helpers} | _data(inv) | \
            {c.name: c.header_fingerprint + "".join(h.fingerprint for h in c.helpers) for c in inv.classes}
    return shape(pair.old) != shape(pair.new)


# Decorators that act on other devices' variants only (``@dtypesIfCUDA``, ``@skipCUDAIfRocm``,
# ``@skipIfMps``): adding, removing or changing one leaves what the test does on spyre unchanged.
# ``onlyCUDA`` and the like are not here: they take the spyre variants away.
OTHER_DEVICE_DECORATOR = re.compile(r"^(?:dtypesIf|skip|skipIf|expectedFailure)(?:CUDA|ROCM|Rocm|MPS|Mps|XPU|HPU|XLA|"
                                    r"Lazy|Meta|Hip|HIP)")


def _other_devices_only(before: TestFunction, before_pair: FilePair, after: TestFunction, pair: FilePair) -> bool:
    """The test's decorators differ only in other devices' decorators and its ``def`` is unchanged."""
    def for_spyre(decorators: list[str]) -> list[str]:
        return [d for d in decorators if not OTHER_DEVICE_DECORATOR.match(d.removeprefix("@"))]
    if before.decorators == after.decorators or for_spyre(before.decorators) != for_spyre(after.decorators):
        return False
    return _def_dump(before_pair.segment("old", before)) == _def_dump(pair.segment("new", after)) is not None


def _modified_detail(before: TestFunction, before_pair: FilePair, after: TestFunction, pair: FilePair) -> str:
    """What changed in a test whose fingerprint changed: its @parametrize values only, or anything."""
    if before.decorators != after.decorators:
        values = parametrize.decorator_change(before.decorators, after.decorators)
        if values and _def_dump(before_pair.segment("old", before)) == _def_dump(pair.segment("new", after)) is not None:
            return values
    return "test body or decorators changed"


def _def_dump(lines: list[str]) -> str | None:
    """The normalised AST of a ``def`` (its decorators are above the lines given), None if it does not parse."""
    try:
        tree = ast.parse(textwrap.dedent("\n".join(lines)))
    except (SyntaxError, ValueError):
        return None
    strip_docstrings(tree)
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def op_list_delta(before: TestFunction, before_pair: FilePair, after: TestFunction,
                  after_pair: FilePair) -> tuple[list[str], list[str], list[str]] | None:
    """(ops added, ops removed, data names that feed the list) when the only change to an @ops test
    is its explicit op list (inline or through a module-level list); else None.

    Then only the added ops' variants are new: the others run exactly as before.
    """
    if before.ops is None or after.ops is None or before.ops == after.ops or before.dtypes != after.dtypes:
        return None
    if any(op == ALL_OPS or op.startswith("@") for op in before.ops + after.ops):
        return None
    if _without_op_list(before.decorators) != _without_op_list(after.decorators):
        return None
    body_before, body_after = before_pair.segment("old", before), after_pair.segment("new", after)
    if body_before != body_after:
        return None
    fed = sorted(n for n in after.names if n in (after_pair.new.assignments if after_pair.new else {})
                 and not any(re.search(rf"\b{re.escape(n)}\b", line) for line in body_after))
    return sorted(set(after.ops) - set(before.ops)), sorted(set(before.ops) - set(after.ops)), fed


def _without_op_list(decorators: list[str]) -> list[str]:
    out = []
    for text in decorators:
        try:
            node = ast.parse(text, mode="eval").body
        except SyntaxError:
            out.append(text)
            continue
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "ops":
            node.args = node.args[1:]
        out.append(ast.dump(node))
    return out


def _op_list_change(path: str, test: TestFunction, pair: FilePair, delta, book: CandidateBook,
                    removed: list[RemovedTest]) -> None:
    added, gone, fed = delta
    old_data = pair.old.assignments if pair.old else {}
    fed = [n for n in fed if pair.new and old_data.get(n, (None,))[0] != pair.new.assignments[n][0]]  # changed ones
    lines = pair.new.assignments.get(fed[0]) if fed and pair.new else None
    lo, hi = (lines[1], lines[2]) if lines else _decorator_lines(pair, test)
    hunk = hunk_for(pair.diff(), lo, hi)
    where = f" (through {fed[0]})" if fed and lines else ""
    for op in added:
        book.add(path, test, "modified", Evidence(file=path, hunk=hunk, line=lo, op=op,
                                                  detail=f"op {op} added to its @ops list{where}"), op=op)
    for op in gone:
        removed.append(RemovedTest(test.test_id(path), f"op {op} removed from its @ops list{where}",
                                   Evidence(file=path, hunk=hunk, line=lo, op=op, detail="op list shrank"), op=op))


def _class_header_lines(pair: FilePair, cls, instantiation: bool) -> tuple[int, int]:
    """Where a class-level change is: its decorators down to its first method (attributes live
    there), or the ``instantiate_device_type_tests(Class, ...)`` call when that is what changed."""
    lines = pair.lines("new")
    if instantiation:
        call = f"instantiate_device_type_tests({cls.name}"
        found = [n for n, line in enumerate(lines, 1) if call in line.replace(" ", "")]
        if found:
            return found[0], found[0] + 2
    top = _block_top(lines, cls.lineno) if cls.decorators else cls.lineno
    methods = [m.lineno for m in cls.tests + cls.helpers]
    return top, max(cls.lineno, min(methods) - 1) if methods else cls.end_lineno


def _decorator_lines(pair: FilePair, test: TestFunction) -> tuple[int, int]:
    """The lines of the test's decorators (the AST gives the ``def`` line only): the block of
    non-blank lines right above it."""
    return _block_top(pair.lines("new"), test.lineno), test.lineno


def _block_top(lines: list[str], lineno: int) -> int:
    """The first of the non-blank lines right above ``lineno`` (a definition's decorators)."""
    top = lineno
    while top > 1 and lines[top - 2].strip() and not lines[top - 2].lstrip().startswith(("def ", "class ", "#")):
        top -= 1
    return top


CLASS_SIMILARITY = 0.5  # share of test names two classes must have in common to be "the same class"


class _Pairing:
    """Pairs a test that appeared with one that disappeared: a move (same name) or a rename (same body).

    Names alone mislead on a real release (``test_linear`` exists in dozens of classes), so a
    pair must also agree on where it lives: the same class name, or two classes whose test names
    mostly coincide (a class moved or renamed with its tests). A rename must keep its class too.
    """

    def __init__(self, old_tests: dict, new_tests: dict, pairs: list[FilePair]) -> None:
        self.old_names: dict[tuple, set[str]] = {}
        self.new_names: dict[tuple, set[str]] = {}
        for (path, cls, name) in old_tests:
            self.old_names.setdefault((path, cls), set()).add(name)
        for (path, cls, name) in new_tests:
            self.new_names.setdefault((path, cls), set()).add(name)
        self.renamed_files = {p.change.path: p.change.before_path for p in pairs if p.change.old_path}
        self.new_tests = new_tests
        self._similar: dict[tuple, float] = {}

    def similarity(self, old_key: tuple, new_key: tuple) -> float:
        """Jaccard similarity of the two classes' test names; 0 unless they share at least two."""
        key = (old_key[:2], new_key[:2])
        if key not in self._similar:
            a, b = self.old_names.get(old_key[:2], set()), self.new_names.get(new_key[:2], set())
            shared = len(a & b)
            self._similar[key] = shared / len(a | b) if shared >= 2 else 0.0
        return self._similar[key]

    def same_place(self, old_key: tuple, new_key: tuple, identical: bool) -> bool:
        """Same file (or its git rename) and class; else an identical body or classes sharing most tests."""
        same_file = old_key[0] == new_key[0] or self.renamed_files.get(new_key[0]) == old_key[0]
        similar = self.similarity(old_key, new_key)
        if same_file:
            return old_key[1] == new_key[1] or identical or similar >= CLASS_SIMILARITY
        if old_key[1] == new_key[1] and old_key[1]:  # a class moved to another file, maybe trimmed
            return identical or similar > 0
        return similar >= CLASS_SIMILARITY

    def pair(self, old_only: dict, new_keys: list[tuple]) -> dict[tuple, tuple[tuple, str]]:
        """{new key: (old key, "moved"|"renamed")}, best pairs first so no greedy order steals a match.

        Best = identical body, then the same file, then the most similar class.
        """
        by_name: dict[str, list[tuple]] = {}
        by_body: dict[str, list[tuple]] = {}
        for k, (t, _) in old_only.items():
            by_name.setdefault(k[2], []).append(k)
            by_body.setdefault(t.fingerprint, []).append(k)
        options = []
        for key in new_keys:
            test = self.new_tests[key][0]
            for how, keys in (("moved", by_name.get(key[2], [])), ("renamed", by_body.get(test.fingerprint, []))):
                for old_key in keys:
                    identical = old_only[old_key][0].fingerprint == test.fingerprint
                    if how == "renamed" and old_key[1] != key[1] or not self.same_place(old_key, key, identical):
                        continue
                    rank = (how != "moved", not identical, old_key[0] != key[0], -self.similarity(old_key, key))
                    options.append((rank, key, old_key, how))
        out: dict[tuple, tuple[tuple, str]] = {}
        taken: set[tuple] = set()
        for _, key, old_key, how in sorted(options):
            if key not in out and old_key not in taken:
                out[key] = (old_key, how)
                taken.add(old_key)
        return out


def _evidence(pair: FilePair, test: TestFunction, detail: str) -> Evidence:
    """Points at the test's first changed line, its decorators included (the AST's line is the ``def``)."""
    top = _decorator_lines(pair, test)[0] if test.decorators else test.lineno
    return Evidence(file=pair.change.path, hunk=hunk_for(pair.diff(), top, test.end_lineno),
                    line=test.lineno, detail=detail)


def _class_and_helper_changes(pair: FilePair, book: CandidateBook) -> None:
    old, new, path = pair.old, pair.new, pair.change.path
    # module-level names: helper functions, data, and classes without tests (``Model()`` in a test)
    changed_module = _changed({h.name: h.fingerprint for h in old.helpers} | _data(old) | _harnesses(old),
                              {h.name: h.fingerprint for h in new.helpers} | _data(new) | _harnesses(new))
    module_uses = {h.name: h.uses + h.names for h in new.helpers}  # names: module constants they read
    module_uses |= {c.name: c.header_names + [n for h in c.helpers for n in h.uses + h.names]
                    for c in new.classes if _is_harness(c)}
    module_lines = {h.name: (h.lineno, h.end_lineno) for h in new.helpers} | \
        {name: (lo, hi) for name, (_, lo, hi) in new.assignments.items()} | \
        {c.name: (c.lineno, c.end_lineno) for c in new.classes if _is_harness(c)}
    changed_keys: dict[str, list[str]] = {}
    for cls in new.classes:
        before = old.class_named(cls.name)
        if before is not None and (before.header_fingerprint != cls.header_fingerprint
                                   or before.instantiate != cls.instantiate):
            what = "instantiate_device_type_tests arguments" if before.header_fingerprint == cls.header_fingerprint \
                else "class decorators, bases or attributes"
            hunk = hunk_for(pair.diff(), *_class_header_lines(pair, cls, what.startswith("instantiate")))
            for test in cls.tests:
                book.add(path, test, "modified", Evidence(file=path, hunk=hunk, line=cls.lineno,
                                                          detail=f"{what} of {cls.name} changed"))
        if before is not None:
            _base_header_changes(pair, cls, book)
        # class attributes = module data; a base class in the file is followed method by method below
        header_reads = sorted(set(cls.header_names) & changed_module - {c.name for c in _local_lineage(cls, new)})
        if header_reads and before is not None:
            lo, hi = module_lines.get(header_reads[0], (cls.lineno, cls.lineno))
            for test in cls.tests:
                book.add(path, test, "helper", Evidence(
                    file=path, hunk=hunk_for(pair.diff(), lo, hi), line=lo,
                    detail=f"class {cls.name} reads changed {', '.join(header_reads)} in its attributes or decorators"))
        # methods the class runs: its own, then those it inherits from base classes in the file (setUp)
        new_methods = _inherited_helpers(cls, new)
        old_methods = _inherited_helpers(before, old) if before is not None else {}
        old_helpers = {name: h.fingerprint for name, h in old_methods.items()}
        new_helpers = {name: h.fingerprint for name, h in new_methods.items()}
        changed_class = _changed(old_helpers, new_helpers) if before is not None else set()
        if not (changed_class or changed_module):
            continue
        uses = dict(module_uses) | {name: _member_reads(h) for name, h in new_methods.items()}
        reach = _closure(changed_class | changed_module, uses)
        class_wide = sorted(n for n in changed_class if n.removeprefix("self.") in CLASS_WIDE)
        lines = {name: (h.lineno, h.end_lineno) for name, h in new_methods.items()} | module_lines
        old_tests = {t.name: t for t in before.tests} if before is not None else {}
        for test in cls.tests:
            hit = sorted(reach.intersection(_member_reads(test))) or class_wide
            if hit and test.name in old_tests and _only_feeds_op_list(hit, old_tests[test.name], test, pair):
                continue  # diff_test_files selects only the ops added
            if hit and hit == class_wide:  # setUp & co.: no call to follow, every test runs them
                lo, hi = lines.get(hit[0], (test.lineno, test.end_lineno))
                book.add(path, test, "helper", Evidence(
                    file=path, hunk=hunk_for(pair.diff(), lo, hi), line=lo,
                    detail=f"{', '.join(n.removeprefix('self.') for n in hit)} of {_owner(cls, new_methods.get(hit[0]))} "
                           f"changed: {BEFORE_SKIPS}"))
            elif hit:
                # `self.name()` reads the attribute `name` too: name the method, not a module function twice
                hit = [n for n in hit if f"self.{n}" not in hit]
                root = _root_cause(hit[0], changed_class | changed_module, uses)
                lo, hi = lines.get(root, (test.lineno, test.end_lineno))
                via = f" (through {hit[0]})" if root != hit[0] else ""
                detail = _data_detail(pair, test, root, via) or f"uses changed helper {', '.join(hit)}; {root} changed{via}"
                for key in changed_keys.setdefault(root, _changed_dict_keys(pair, root)) or [None]:
                    book.add(path, test, "helper", Evidence(
                        file=path, hunk=hunk_for(pair.diff(), lo, hi), line=lo, op=key,
                        detail=detail + (f" (entry {key!r})" if key else "")))
    if changed_module:
        reach = _closure(changed_module, module_uses)
        old_functions = {t.name: t for t in old.functions}
        for test in new.functions:
            hit = sorted(reach.intersection(test.uses + test.names))
            if hit and test.name in old_functions and _only_feeds_op_list(hit, old_functions[test.name], test, pair):
                continue
            if hit:
                root = _root_cause(hit[0], changed_module, module_uses)
                lo, hi = module_lines.get(root, (test.lineno, test.end_lineno))
                via = f" (through {hit[0]})" if root != hit[0] else ""
                book.add(path, test, "helper", Evidence(file=path, hunk=hunk_for(pair.diff(), lo, hi), line=lo,
                                                        detail=_data_detail(pair, test, root, via)
                                                        or f"uses changed helper {', '.join(hit)}"))


def _data_detail(pair: FilePair, test: TestFunction, root: str, via: str) -> str | None:
    """The reason for a test reaching changed module-level data ``root`` (None when ``root`` is a
    function): its @parametrize values when it parametrizes over it, else the data it reads."""
    new = pair.new.assignments.get(root) if pair.new else None
    if new is None or any(h.name == root for h in pair.new.helpers):
        return None
    argument = parametrize.reading(test.decorators, root) if not via else None
    if argument is not None:
        old = pair.old.assignments.get(root) if pair.old else None
        delta = parametrize.assignment_delta(pair.old_text, pair.new_text, old and old[1:], new[1:])
        return parametrize.describe(argument, delta, f" (module-level {root})")
    return f"reads module-level {root}, which changed{via}"


def _changed_dict_keys(pair: FilePair, name: str) -> list[str]:
    """For a module-level ``NAME = {"key": ...}`` dict of string keys at both refs, the keys whose
    entry was added, removed or changed (``KWARGS["sum"]``); [] for any other shape.

    A test parametrized over the same names (``@parametrize("op_name", OPS)``, ``KWARGS[op_name]``)
    meets the change in those variants only: the reasons name the keys (``Evidence.op``) and stage 4
    runs those variants first; every variant stays selected (the test may read the dict otherwise)."""
    entries = []
    for inv, text in ((pair.old, pair.old_text), (pair.new, pair.new_text)):
        where = inv.assignments.get(name) if inv is not None else None
        if where is None or text is None:
            return []
        try:
            tree = ast.parse(textwrap.dedent("\n".join(text.splitlines()[where[1] - 1:where[2]])))
        except (SyntaxError, ValueError):
            return []
        value = tree.body[0].value if len(tree.body) == 1 and isinstance(tree.body[0], ast.Assign) else None
        if not isinstance(value, ast.Dict) or not all(isinstance(k, ast.Constant) and isinstance(k.value, str)
                                                      for k in value.keys):
            return []
        entries.append({k.value: ast.dump(v) for k, v in zip(value.keys, value.values)})
    return sorted(_changed(*entries))


def _inherited_helpers(cls, file_inv: FileInventory) -> dict:
    """``self.name`` -> method for the methods ``cls`` has, its own first, then those of its base
    classes defined in the same file (a subclass's own definition overrides its base's)."""
    out: dict = {}
    for owner in _local_lineage(cls, file_inv):
        for helper in owner.helpers:
            out.setdefault(f"self.{helper.name}", helper)
    return out


def _base_header_changes(pair: FilePair, cls, book: CandidateBook) -> None:
    """A base class in the same file whose decorators, bases or attributes changed reaches the
    tests of ``cls``: those reading a changed attribute (themselves or through the methods they
    run, setUp included) when only plain attributes changed, every test of ``cls`` otherwise."""
    old, new, path = pair.old, pair.new, pair.change.path
    methods = {name.removeprefix("self."): h for name, h in _inherited_helpers(cls, new).items()}
    for base in _local_lineage(cls, new)[1:]:
        before = old.class_named(base.name)
        if before is None or before.header_fingerprint == base.header_fingerprint:
            continue
        attributes = _changed_attributes(pair, base.name)
        hunk = hunk_for(pair.diff(), *_class_header_lines(pair, base, False))
        for test in cls.tests:
            if attributes is None:
                detail = f"decorators or bases of base class {base.name} changed"
            elif hit := sorted(attributes & _reads(test, methods)):
                detail = f"reads {', '.join(hit)}, a changed attribute of base class {base.name}"
            else:
                continue
            book.add(path, test, "helper", Evidence(file=path, hunk=hunk, line=base.lineno, detail=detail))


def _changed_attributes(pair: FilePair, class_name: str) -> set[str] | None:
    """Names of the class-level attributes of ``class_name`` that differ between the two sides, or
    None when anything else in its header changed (decorators, bases, a statement binding no plain name)."""
    sides = []
    for side in ("old", "new"):
        node = pair.module_classes(side).get(class_name)
        if node is None:
            return None
        attributes, other = {}, [ast.dump(d) for d in node.decorator_list + node.bases + node.keywords]
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) or \
                    isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # methods are compared on their own; a docstring changes nothing
            targets = statement.targets if isinstance(statement, ast.Assign) else \
                [statement.target] if isinstance(statement, ast.AnnAssign) else []
            if not targets or not all(isinstance(t, ast.Name) for t in targets):
                other.append(ast.dump(statement))
                continue
            for target in targets:
                attributes[target.id] = ast.dump(statement)
        sides.append((attributes, other))
    (old_attrs, old_other), (new_attrs, new_other) = sides
    return _changed(old_attrs, new_attrs) if old_other == new_other else None


def _only_feeds_op_list(hit: list[str], before: TestFunction, after: TestFunction, pair: FilePair) -> bool:
    delta = op_list_delta(before, pair, after, pair)
    return delta is not None and set(hit) <= set(delta[2])


def diff_helper_modules(pairs: list[FilePair], inventory: Inventory, book: CandidateBook, errors: list[str],
                        load_modules=None) -> None:
    """Changed functions and classes of helper modules, propagated to every test that uses them.

    ``load_modules(wanted)`` returns the to-ref inventories of unchanged helper modules that may
    call one of ``wanted`` ({module: names}); their helpers that do are followed as changed too,
    module after module, so a test -> helper in A -> changed helper in B is found.
    """
    changed: dict[str, tuple[FilePair, tuple[int, int]]] = {}
    # base class -> (changed methods, file, lines): narrows a change inside a large shared class
    # (common_utils.TestCase) to the tests that call what changed
    members: dict[str, tuple[set[str], FilePair, tuple[int, int]]] = {}
    broken_modules: list[tuple[str, FilePair]] = []
    causes: dict[str, str] = {}  # a class changed whole -> what changed in it (see _class_cause)
    for pair in pairs:
        module = module_name(pair.change.path)
        old = pair.old or FileInventory(path=pair.change.before_path)
        new = pair.new or FileInventory(path=pair.change.path)
        if old.error or new.error:
            pair.change.error = f"syntax error: {old.error or new.error}"
            errors.append(f"{pair.change.path}: {pair.change.error}; every test importing {module} is a candidate")
            broken_modules.append((module, pair))
            continue
        functions_old = {h.name: h.fingerprint for h in old.helpers} | _data(old) | \
            {c.name: _class_key(c, old.class_named(c.name) is None) for c in old.classes}
        functions_new = {h.name: h.fingerprint for h in new.helpers} | _data(new) | \
            {c.name: _class_key(c, old.class_named(c.name) is None) for c in new.classes}
        names = _closure(_changed(functions_old, functions_new), {h.name: h.uses + h.names for h in new.helpers})
        where = {h.name: (h.lineno, h.end_lineno) for h in new.helpers} | \
            {c.name: (c.lineno, c.end_lineno) for c in new.classes} | \
            {name: (lo, hi) for name, (_, lo, hi) in new.assignments.items()}
        for name in names:
            span = where.get(name, (1, 1))
            if (cls := new.class_named(name)) is not None:  # a shared class changed whole: point at what did
                causes[f"{module}.{name}"], span = _class_cause(old.class_named(name), cls, pair.diff())
            changed[f"{module}.{name}"] = (pair, span)
        for cls in new.classes:
            before = old.class_named(cls.name)
            if before is None or cls.name in names:
                continue
            methods = _changed_methods(before, cls, {n for n in names if "." not in n})
            if methods:
                if _is_harness(cls):  # Harness().method(), Harness.build(): the method by its qualified name
                    for method in cls.helpers:
                        if method.name in methods:
                            changed[f"{module}.{cls.name}.{method.name}"] = (pair, (method.lineno, method.end_lineno))
                # methods removed from the class have no lines at the to-ref: point at the class then
                spans = [(m.lineno, m.end_lineno) for m in cls.helpers + cls.tests if m.name in methods] or \
                    [(cls.lineno, cls.end_lineno)]
                lo, hi = min(a for a, _ in spans), max(b for _, b in spans)
                members[f"{module}.{cls.name}"] = (methods, pair, (lo, hi))
                names.add(f"{cls.name}.{{{', '.join(sorted(methods))}}}")
        if names:
            pair.change.details.append("changed: " + ", ".join(sorted(names)))
    if not changed and not broken_modules and not members:
        return
    via = _follow_modules(changed, {module_name(p.change.path) for p in pairs}, load_modules, members) \
        if changed else {}
    if load_modules is not None and (members or changed):  # class JitTestCase(JitCommonTestCase(TestCase))
        modules = {module_name(p.change.path): p.new for p in pairs if p.new is not None and not p.new.error}
        wanted: dict[str, set[str]] = {}
        for key in members:
            module, _, short = key.rpartition(".")
            wanted.setdefault(module, set()).add(short)
        loaded = load_modules(wanted)
        modules |= {module_name(path): inv for path, inv in loaded.items() if not inv.error}
        _inherit_across_modules(changed, members, modules, via)
    made: dict[tuple, Evidence] = {}  # one reason per changed helper and wording, shared by the tests it reaches
    for path, file_inv in sorted(inventory.files.items()):
        module_helpers = {h.name: h for h in file_inv.helpers}
        for cls in file_inv.classes:
            bases = _ancestors(cls, file_inv)
            header = {file_inv.imports[n] for n in cls.header_names if n in file_inv.imports}  # dtypes = FLOATS
            base_hits = sorted((bases | header) & set(changed))
            # helpers of the test's class and of its base classes in the same file
            own = {h.name: h for c in reversed(_local_lineage(cls, file_inv)) for h in c.helpers}
            class_helpers = {f"self.{name}": h for name, h in own.items()}
            for test in cls.tests:
                hits = sorted({u for u in test.uses if u in changed})
                if not hits and base_hits:  # a whole shared base class changed (header, setUp & co.)
                    pair, (lo, hi) = changed[base_hits[0]]
                    detail = _base_class_detail(base_hits[0], via, causes) if base_hits[0] in bases else \
                        f"class {cls.name} reads changed {base_hits[0]} in its attributes or decorators"
                    book.add(path, test, "helper", Evidence(file=pair.change.path, hunk=hunk_for(pair.diff(), lo, hi),
                                                            line=lo, detail=detail))
                else:
                    _add_helper_hits(path, test, hits or _wrapped(test, module_helpers | class_helpers, changed),
                                     changed, book, via, made)
                _add_member_hits(path, test, bases, _reads(test, own), members, book)
                _add_broken_hits(path, test, broken_modules, book)
        for test in file_inv.functions:
            hits = sorted({u for u in test.uses if u in changed}) or _wrapped(test, module_helpers, changed)
            _add_helper_hits(path, test, hits, changed, book, via, made)
            _add_broken_hits(path, test, broken_modules, book)


def _follow_modules(changed: dict, diffed: set[str], load_modules, members: dict | None = None) -> dict[str, list[str]]:
    """Add to ``changed`` every helper of an unchanged module that calls a changed one (transitively,
    across modules), and every method of its classes that does (``module.Class.method``; for a test
    base class also in ``members``, so subclass tests calling it through ``self`` are reached);
    returns, per added name, the callers between it and the changed definition."""
    via: dict[str, list[str]] = {}
    frontier = set(changed)
    loaded: dict[str, FileInventory] = {}
    while frontier and load_modules is not None:
        wanted: dict[str, set[str]] = {}
        for name in frontier:
            module, _, short = name.rpartition(".")
            wanted.setdefault(module, set()).add(short)
        loaded.update(load_modules(wanted))
        frontier = set()
        grew = True
        while grew:  # within a loaded module, local callers of a newly changed helper count too
            grew = False
            for path, inv in loaded.items():
                module = module_name(path)
                if module in diffed or inv.error:
                    continue
                owners = [(None, h) for h in inv.helpers] + [(c, h) for c in inv.classes for h in c.helpers]
                for cls, helper in owners:
                    prefix = f"{module}.{cls.name}." if cls is not None else f"{module}."
                    name = prefix + helper.name
                    if name in changed:
                        continue
                    uses = {f"{prefix}{u[5:]}" if u.startswith("self.") else u if "." in u else f"{module}.{u}"
                            for u in helper.uses}
                    hit = sorted(uses & changed.keys())
                    if hit:
                        changed[name] = changed[hit[0]]
                        via[name] = [hit[0]] + via.get(hit[0], [])
                        frontier.add(name)
                        grew = True
                        if cls is not None and members is not None and not _is_harness(cls):
                            entry = members.setdefault(f"{module}.{cls.name}", (set(), *changed[hit[0]]))
                            entry[0].add(helper.name)
                        if cls is not None and helper.name in ON_USE and f"{module}.{cls.name}" not in changed:
                            changed[f"{module}.{cls.name}"] = changed[hit[0]]
                            via[f"{module}.{cls.name}"] = [name] + via[name]
    return via


def _qualified_base(base: str, inv: FileInventory, module: str) -> str:
    head, dot, rest = base.partition(".")
    if head in inv.imports:
        return inv.imports[head] + dot + rest
    return f"{module}.{base}" if not dot and inv.class_named(base) is not None else base


def _inherit_across_modules(changed: dict, members: dict, modules: dict[str, FileInventory], via: dict) -> None:
    """Classes of helper modules inheriting a changed class (``changed``, whole) or changed methods
    (``members``) inherit the change, a few levels down: a test of ``class TestX(JitTestCase)``
    calling ``self.assertEqual`` reaches a changed ``common_utils.TestCase.assertEqual`` through
    ``jit_utils.JitTestCase`` -> ``common_jit.JitCommonTestCase``. An overriding method counts as
    inheriting too (it may call ``super()``): over-selecting, never missing."""
    for _ in range(4):
        grew = False
        for module, inv in sorted(modules.items()):
            for cls in inv.classes:
                name = f"{module}.{cls.name}"
                for base in (_qualified_base(b, inv, module) for b in cls.bases):
                    if base in changed and name not in changed:
                        changed[name] = changed[base]
                        via[name] = [base] + via.get(base, [])
                        grew = True
                    if base in members:
                        methods, pair, lines = members[base]
                        entry = members.setdefault(name, (set(), pair, lines))
                        if not methods <= entry[0]:
                            entry[0].update(methods)
                            grew = True
        if not grew:
            return


def _wrapped(test, helpers: dict, changed: dict) -> list[str]:
    """Changed names a test reaches through helpers of its own file (module functions, its class's
    methods), as "wrapper -> changed" so the explanation names the wrapper."""
    seen, pending = set(), [(u, u) for u in test.uses if u in helpers]
    while pending:
        name, first = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        helper = helpers[name]
        hit = sorted(changed.keys() & set(helper.uses))
        if hit:
            return [f"{first} -> {hit[0]}"]
        pending += [(u, first) for u in helper.uses if u in helpers]
    return []


def _root_cause(name: str, changed: set[str], uses: dict[str, list[str]]) -> str:
    """The changed definition ``name`` reaches (itself if changed): where the explanation should point."""
    seen, stack = set(), [name]
    while stack:
        current = stack.pop()
        if current in changed:
            return current
        if current not in seen:
            seen.add(current)
            stack.extend(sorted(set(uses.get(current, [])), reverse=True))
    return name


def _data(inv: FileInventory) -> dict[str, str]:
    """Module-level data (constants, dtype lists, parametrize values) by name, as fingerprints."""
    return {name: fp for name, (fp, _, _) in inv.assignments.items()}


def _owner(cls, method) -> str:
    """``cls``, or the base class in the same file that defines ``method`` (None: it was removed)."""
    return cls.name if method is None or method.class_name in (None, cls.name) else f"base class {method.class_name}"


def _member_reads(member) -> list[str]:
    """What a method reads, an attribute ``name`` also as ``self.name``: the scan knows a class's own
    methods as ``self.`` uses, not those it inherits from a base class in the same file."""
    return member.uses + member.names + [f"self.{name}" for name in member.names]


def _harnesses(inv: FileInventory) -> dict[str, str]:
    """A test file's classes without tests (models, mixins, harnesses) by name, as fingerprints."""
    return {c.name: c.header_fingerprint + _methods(c) for c in inv.classes if _is_harness(c)}


def _methods(cls) -> str:
    return "".join(h.fingerprint for h in cls.helpers) + "".join(t.fingerprint for t in cls.tests)


def _class_cause(before, after, found: list[Hunk]) -> tuple[str, tuple[int, int]]:
    """What made a shared class change whole (see ``_class_key``), in words, and the new-side lines
    that show it: its every-test methods first (``setUp`` and the like), else the first hunk of its
    header outside its methods. The class's first hunk may be an unrelated method's."""
    if before is None:
        return "new class", (after.lineno, after.end_lineno)
    old = {m.name: m.fingerprint for m in before.helpers if m.name in WHOLE_CLASS}
    new = {m.name: m for m in after.helpers if m.name in WHOLE_CLASS}
    methods = sorted(_changed(old, {n: m.fingerprint for n, m in new.items()}), key=WHOLE_CLASS.index)
    if methods:
        spans = [(new[n].lineno, new[n].end_lineno) for n in methods if n in new] or [(after.lineno, after.end_lineno)]
        return f"{', '.join(methods)} changed, which run with every test", min(spans)
    members = [(m.lineno, m.end_lineno) for m in after.helpers + after.tests]
    for hunk in found:
        lo, hi = hunk.new_start, hunk.new_start + max(hunk.new_len, 1) - 1
        if hunk.touches_new(after.lineno, after.end_lineno) and not any(a <= lo and hi <= b for a, b in members):
            return HEADER_CAUSE, (lo, hi)
    return HEADER_CAUSE, (after.lineno, after.lineno)


def _base_class_detail(base: str, via: dict[str, list[str]], causes: dict[str, str]) -> str:
    """Why a test is selected for a base class that changed whole, naming the class that changed
    (``JitTestCase`` inherits ``common_utils.TestCase``'s change) and what changed in it."""
    root = (via.get(base) or [base])[-1]
    through = f" (through {base})" if root != base else ""
    return f"base class {root}: {causes.get(root, 'changed (its header or a method every test runs)')}{through}"


def _class_key(cls, new_class: bool) -> str:
    """What makes a whole shared class "changed": its header, or a method every test runs (setUp...)."""
    wide = [m.fingerprint for m in cls.helpers if m.name in WHOLE_CLASS]
    return cls.header_fingerprint + "".join(wide) + (_methods(cls) if new_class else "")


def _changed_methods(before, after, module_changed: set[str] = frozenset()) -> set[str]:
    """Methods of a shared class that changed, plus those that call them through ``self`` or call a
    changed module-level helper of the same module (``module_changed``, bare names)."""
    old = {m.name: m.fingerprint for m in before.helpers + before.tests}
    new = {m.name: m.fingerprint for m in after.helpers + after.tests}
    changed = {f"self.{n}" for n in _changed(old, new)} | set(module_changed)
    uses = {f"self.{h.name}": h.uses + h.names for h in after.helpers}
    return {n.removeprefix("self.") for n in _closure(changed, uses) if n.startswith("self.")}


def _is_harness(cls) -> bool:
    """A helper module's class that is no test case (no tests, no TestCase base): used by building
    it or calling its methods (``Harness().check()``, ``Harness.build()``), not only by inheriting."""
    return not cls.tests and not any("TestCase" in b for b in cls.bases)


def _ancestors(cls, file_inv: FileInventory, depth: int = 4) -> set[str]:
    """Qualified base classes, following bases defined in the same file a few levels up."""
    out: set[str] = set()
    frontier = [cls]
    for _ in range(depth):
        nxt = []
        for current in frontier:
            for base in current.bases:
                out.add(file_inv.imports.get(base.split(".")[0], base) if "." not in base
                        else file_inv.imports.get(base.split(".")[0], base.split(".")[0]) + "." + base.split(".", 1)[1])
                local = file_inv.class_named(base)
                if local is not None and local is not current:
                    nxt.append(local)
        frontier = nxt
    return out


def _reads(test, helpers: dict) -> set[str]:
    """Names a test reads itself, through the class helpers it calls, and through setUp-like methods."""
    names = set(test.names)
    pending = [h for name, h in helpers.items() if name in names or name in CLASS_WIDE]
    seen: set[str] = set()
    while pending:
        helper = pending.pop()
        if helper.name in seen:
            continue
        seen.add(helper.name)
        names |= set(helper.names)
        pending += [h for name, h in helpers.items() if name in helper.names and name not in seen]
    return names


def _local_lineage(cls, file_inv: FileInventory, depth: int = 4) -> list:
    """``cls`` and its base classes defined in the same file, a few levels up."""
    out, frontier = [cls], [cls]
    for _ in range(depth):
        frontier = [local for current in frontier for base in current.bases
                    if (local := file_inv.class_named(base)) is not None and local not in out]
        out += frontier
    return out


def _add_member_hits(path, test, bases: set[str], reads: set[str], members, book) -> None:
    for base in sorted(bases & members.keys()):
        methods, pair, (lo, hi) = members[base]
        hit = sorted(methods & reads)
        if hit:
            book.add(path, test, "helper", Evidence(
                file=pair.change.path, hunk=hunk_for(pair.diff(), lo, hi), line=lo,
                detail=f"calls {base}.{', '.join(hit)} (changed) through its base class"))
            return


def _add_helper_hits(path, test, hits, changed, book, via=None, made: dict | None = None) -> None:
    """``made``: the reasons built so far, by what they say (a changed base class reaches thousands of tests)."""
    if not hits:
        return
    wrapper, _, first = hits[0].rpartition(" -> ")  # "wrapper -> changed" when reached through a local wrapper
    pair, (lo, hi) = changed[first]
    chain = ([wrapper] if wrapper else []) + [first] + (via or {}).get(first, [])
    detail = f"uses changed helper {', '.join(hits)}" if len(chain) == 1 else \
        f"uses changed helper {chain[0]}; {chain[-1]} changed (through {' -> '.join(chain[:-1])})"
    short = chain[-1].rpartition(".")[2]
    if pair.new is not None and short in pair.new.assignments and not any(h.name == short for h in pair.new.helpers):
        through = f" (through {' -> '.join(chain[:-1])})" if len(chain) > 1 else ""
        argument = parametrize.reading(test.decorators, short) if len(chain) == 1 else None
        old = pair.old.assignments.get(short) if pair.old else None
        detail = parametrize.describe(argument, parametrize.assignment_delta(
            pair.old_text, pair.new_text, old and old[1:], pair.new.assignments[short][1:]), f" (module-level {chain[-1]})") \
            if argument is not None else f"reads module-level {chain[-1]}, which changed{through}"
    key = (first, detail)
    made = {} if made is None else made
    if key not in made:
        made[key] = Evidence(file=pair.change.path, hunk=hunk_for(pair.diff(), lo, hi), line=lo, detail=detail)
    book.add(path, test, "helper", made[key])


def _add_broken_hits(path, test, broken_modules, book) -> None:
    for module, pair in broken_modules:
        if any(use.startswith(module + ".") for use in test.uses):
            book.add(path, test, "helper", Evidence(file=pair.change.path, detail=f"{module} does not parse at one ref"))
