"""What the AST scan knows about an upstream tree's tests, without importing anything."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

ALL_OPS = "*"  # @ops(op_db): every OpInfo entry


@dataclass
class TestFunction:
    """One test method (or module-level test function) as written, before device instantiation."""

    __test__ = False  # not a pytest class

    name: str
    class_name: str | None
    lineno: int
    end_lineno: int
    fingerprint: str  # normalised AST without name, comments, docstrings or formatting
    decorators: list[str] = field(default_factory=list)
    ops: list[str] | None = None  # None: not @ops; "*" all of op_db; "@unary_ufuncs" a named list
    dtypes: list[str] = field(default_factory=list)
    restrictions: list[str] = field(default_factory=list)  # onlyCPU, onlyOn(...), skipIf..., expectedFailure...
    uses: list[str] = field(default_factory=list)  # helpers called or applied, qualified where imported
    names: list[str] = field(default_factory=list)  # every global/attribute name its code reads (self.X -> X)
    variants: int | None = None  # per device; None when OpInfo dtypes decide it
    dynamic: list[str] = field(default_factory=list)  # what static analysis cannot follow: exec, eval, getattr:<module>

    def test_id(self, path: str) -> str:
        if path and self.class_name:  # the usual shape, built without a join (stage 1 asks 100k times)
            return f"{path}::{self.class_name}::{self.name}"
        return "::".join(p for p in (path, self.class_name, self.name) if p)


@dataclass
class HelperFunction:
    """A module-level function or a non-test method that tests call."""

    name: str
    class_name: str | None
    lineno: int
    end_lineno: int
    fingerprint: str
    uses: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # every global/attribute name its code reads
    dynamic: list[str] = field(default_factory=list)  # as TestFunction.dynamic


@dataclass
class TestClass:
    __test__ = False

    name: str
    lineno: int
    end_lineno: int
    bases: list[str] = field(default_factory=list)
    decorators: list[str] = field(default_factory=list)
    header_fingerprint: str = ""  # decorators, bases and class-level statements
    header_names: list[str] = field(default_factory=list)  # global names those read (dtypes = FLOAT_TYPES)
    tests: list[TestFunction] = field(default_factory=list)
    helpers: list[HelperFunction] = field(default_factory=list)
    instantiate: dict | None = None  # {"only_for": [...], "except_for": [...]} when device-generic


@dataclass
class FileInventory:
    path: str
    classes: list[TestClass] = field(default_factory=list)
    functions: list[TestFunction] = field(default_factory=list)  # module-level test_* functions
    helpers: list[HelperFunction] = field(default_factory=list)  # module-level non-test functions
    imports: dict[str, str] = field(default_factory=dict)  # local name -> module.name
    # module-level NAME = ... (constants, dtype lists, parametrize values): name -> (fingerprint, first, last line)
    assignments: dict[str, tuple[str, int, int]] = field(default_factory=dict)
    error: str | None = None  # syntax error, "line N: message"
    star_imports: list[str] = field(default_factory=list)  # modules imported with `from M import *`
    # names a star import of this file takes: its `__all__` when written out as strings, else None
    # (every public name; also when `__all__` is computed, which static analysis cannot follow)
    exported: list[str] | None = None

    def all_tests(self) -> list[TestFunction]:
        return [t for c in self.classes for t in c.tests] + list(self.functions)

    def class_named(self, name: str | None) -> TestClass | None:
        return next((c for c in self.classes if c.name == name), None)


@dataclass
class Inventory:
    sha: str | None
    files: dict[str, FileInventory] = field(default_factory=dict)

    def tests(self):
        """(path, TestFunction) for every test in the tree, in path order."""
        for path in sorted(self.files):
            for test in self.files[path].all_tests():
                yield path, test

    def op_tests(self) -> list[tuple[str, TestFunction]]:
        """(path, test) for every @ops test: the only ones an OpInfo or op-source change can reach.

        Kept after the first call (per entry of a 500-entry OpInfo diff, a rescan would cost seconds).
        """
        key = tuple(self.files)
        if getattr(self, "_op_tests_key", None) != key:
            self._op_tests = [(path, test) for path, test in self.tests() if test.ops is not None]
            self._op_tests_key = key
        return self._op_tests

    def op_test_groups(self) -> dict[tuple[str, ...], list[tuple[str, TestFunction]]]:
        """``op_tests()`` grouped by op list, in path order within each group (kept like op_tests)."""
        tests = self.op_tests()
        if getattr(self, "_groups_of", None) is not tests:
            self._groups: dict[tuple[str, ...], list[tuple[str, TestFunction]]] = {}
            for path, test in tests:
                self._groups.setdefault(tuple(test.ops), []).append((path, test))
            self._groups_of = tests
        return self._groups

    def counts(self) -> dict[str, int]:
        tests = list(self.tests())
        return {"files": len(self.files), "tests": len(tests),
                "op_tests": sum(1 for _, t in tests if t.ops is not None),
                "errors": sum(1 for f in self.files.values() if f.error)}

    def to_json(self) -> dict:
        return {"sha": self.sha, "files": {p: asdict(f) for p, f in sorted(self.files.items())}}
