"""AST scan of upstream test files: classes, tests, decorators, helpers, OpInfo names.

Nothing is imported or executed: upstream files are parsed with ``ast`` only, so a tree
from another PyTorch version (or with a syntax error) is safe to read.
"""
from __future__ import annotations

import ast
import hashlib
import marshal
import multiprocessing
import os
import pickle
import posixpath
import sys
import types
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from selector.inventory import reuse
from selector.inventory.cache import open_cache, store_pickled
from selector.inventory.model import ALL_OPS, FileInventory, HelperFunction, Inventory, TestClass, TestFunction

RESTRICTION_PREFIXES = ("only", "skip", "expectedFailure", "dtypesIf", "deviceCountAtLeast", "largeTensorTest",
                        "precisionOverride", "toleranceOverride", "xfail", "slowTest")
DYNAMIC_CALLS = {"exec", "eval", "getattr"}
OPINFO_LISTS = {"unary_ufuncs", "binary_ufuncs", "reduction_ops", "spectral_funcs", "shape_funcs",
                "foreach_unary_op_db", "foreach_binary_op_db", "python_ref_db", "sparse_unary_ufuncs"}


def is_test_file(path: str) -> bool:
    name = posixpath.basename(path)
    return path.endswith(".py") and name.startswith("test_") and (path.startswith("test/") or "/test/" in path)


def module_name(path: str) -> str:
    """The import name a file has when tests run from ``test/`` (helpers) or the repo root (torch)."""
    stem = path[:-3] if path.endswith(".py") else path
    if stem.startswith("test/"):
        stem = stem[len("test/"):]
    return stem.replace("/", ".").removesuffix(".__init__")


def compile_function(node: ast.AST) -> types.CodeType | None:
    """The function's code without its name or line table; None if it only compiles in context."""
    name = node.name
    node.name = "_"
    try:
        code = compile(ast.Module(body=[node], type_ignores=[]), "<upstream>", "exec", dont_inherit=True, optimize=0)
        return _without_lines(code)
    except (SyntaxError, ValueError, TypeError):
        return None
    finally:
        node.name = name


# marshal's format 3+ writes back-references only for objects referenced more than once, so the
# bytes of one code object depend on who else holds it; format 2 writes everything by value
MARSHAL_VERSION = 2


def fingerprint(node: ast.AST, code: types.CodeType | None = None) -> str:
    """A digest of a node's normalised form: name, formatting, comments and docstrings do not count.

    Functions are compiled (C speed) and their code objects hashed without line tables;
    anything else, or a function that only compiles in context (``nonlocal``), uses ``ast.dump``.
    """
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        code = code or compile_function(node)
        data = marshal.dumps(code, MARSHAL_VERSION) if code is not None else \
            "|".join(_dump(p) for p in (node.decorator_list, node.args, node.body, node.returns)).encode()
    else:
        data = _dump(node).encode()
    return hashlib.blake2b(data, digest_size=12).hexdigest()


def _without_lines(code: types.CodeType) -> types.CodeType:
    consts = tuple(_without_lines(c) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_firstlineno=1, co_linetable=b"", co_consts=consts)


def _code_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _dump(value) -> str:
    if isinstance(value, list):
        return "[" + ",".join(_dump(v) for v in value) + "]"
    if value is None or isinstance(value, str):
        return repr(value)
    return ast.dump(value, annotate_fields=False, include_attributes=False)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def code_digest(text: str | None) -> str | None:
    """A digest of a source's code without comments, docstrings or formatting (None when missing or
    not parsing): two versions with equal digests differ only in those. The module is compiled and
    its code hashed without line tables (``ast.dump`` of a 20k-line file took seconds)."""
    if text is None:
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    strip_docstrings(tree)
    try:
        data = marshal.dumps(_without_lines(compile(tree, "<upstream>", "exec", dont_inherit=True, optimize=0)),
                             MARSHAL_VERSION)
    except (SyntaxError, ValueError):  # parses but does not compile (`return` at module level): compare the tree
        data = ast.dump(tree, annotate_fields=False, include_attributes=False).encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def strip_docstrings(node: ast.AST) -> None:
    """Drop docstrings in place so a docstring-only edit leaves fingerprints unchanged.

    Only statements are visited (docstrings live in bodies), which is much cheaper than ast.walk.
    """
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        node.body = body = body[1:] or [ast.copy_location(ast.Pass(), body[0])]
    for statement in body:
        if isinstance(statement, _SCOPES):
            strip_docstrings(statement)
        elif isinstance(statement, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
            for inner in (statement.body, getattr(statement, "orelse", []), getattr(statement, "finalbody", [])):
                for child in inner:
                    if isinstance(child, _SCOPES):
                        strip_docstrings(child)


def parse(text: str, path: str) -> tuple[ast.Module | None, str | None]:
    try:
        return _parse_stripped(text, path), None
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return None, f"line {line}: {getattr(exc, 'msg', exc)}" if line else str(exc)


def _parse_stripped(text: str, path: str = "<unknown>") -> ast.Module:
    tree = ast.parse(text, filename=path)
    strip_docstrings(tree)
    return tree


_BLOCKS = (ast.If, ast.Try, ast.With)


def flat_body(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements of a module or class body, with those inside ``if``/``try``/``with`` blocks inlined.

    Upstream guards whole classes (``if not TEST_WITH_ASAN: class ...``) and methods
    (``if sys.version_info ...: def test_...``) this way; every branch is kept, since which one
    runs is decided at import time on the device, not here. Nested classes are not inlined:
    pytest does not collect them.
    """
    out: list[ast.stmt] = []
    for node in body:
        if isinstance(node, _BLOCKS):
            if isinstance(node, ast.If):  # the guard's condition counts in a class header; its body does not
                out.append(ast.Expr(value=node.test))
            for part in ("body", "orelse", "finalbody"):
                out.extend(flat_body(getattr(node, part, [])))
            for handler in getattr(node, "handlers", []):
                out.extend(flat_body(handler.body))
        else:
            out.append(node)
    return out


@dataclass
class PathMemo:
    """What the scans of one path's versions share (they run one after the other in one worker)."""

    code: dict = field(default_factory=dict)  # definition text -> compiled code (None: compiles only in context)
    earlier: reuse.ScannedVersion | None = None  # the first version scanned, for the next to re-use


class _FileScanner:
    def __init__(self, path: str, tree: ast.Module, lines: list[str] | None = None, code_memo: dict | None = None,
                 placed: dict[int, reuse.Placement] | None = None) -> None:
        self.path = path
        self.tree = tree
        self.code_memo = code_memo
        self.lines = lines or []  # needed with a code memo: definition texts are its keys
        self.placed = placed or {}  # node id -> where a function re-used from an earlier version now stands
        self.units: list[reuse.Unit] = []  # what this scan analysed, for the next version to re-use
        self.imports: dict[str, str] = {}
        self.constants: dict[str, list[str]] = {}
        self.local_functions: set[str] = set()
        self.star_imports: list[str] = []
        self._module_context: tuple = ()

    def scan(self) -> FileInventory:
        inv = FileInventory(path=self.path)
        body = flat_body(self.tree.body)
        for node in body:
            self._note_module_statement(node)
        inv.imports = dict(self.imports)
        inv.star_imports = list(self.star_imports)
        # everything a function's entry depends on besides its own text and class (see _function)
        self._module_context = (tuple(sorted(self.imports.items())), tuple(sorted(self.local_functions)),
                                tuple(sorted((k, tuple(v)) for k, v in self.constants.items())))
        inv.assignments = _assignments(body)
        inv.exported = _exported(body)
        classes: dict[str, TestClass] = {}
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                entry = self._function(node, None, frozenset())
                (inv.functions if isinstance(entry, TestFunction) else inv.helpers).append(entry)
            elif isinstance(node, ast.ClassDef):
                cls = self._class(node)
                if cls is not None:
                    classes[cls.name] = cls
                    inv.classes.append(cls)
        for call in self._module_calls():
            self._note_instantiation(call, classes)
        return inv

    # module level ---------------------------------------------------------
    def _note_module_statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.ImportFrom) and node.module and any(a.name == "*" for a in node.names):
            self.star_imports.append(node.module if node.level == 0 else "." * node.level + node.module)
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.ImportFrom):  # relative import: resolve against this file's package
            package = module_name(self.path).rsplit(".", node.level)[0] if "." in module_name(self.path) else ""
            base = ".".join(p for p in (package, node.module) if p)
            for alias in node.names:
                self.imports[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                self.imports[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.local_functions.add(node.name)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            strings = _string_constants(node.value, {})
            if strings and isinstance(node.value, (ast.Tuple, ast.List, ast.Set)):
                self.constants[node.targets[0].id] = strings

    def _module_calls(self):
        for node in self.tree.body:
            value = node.value if isinstance(node, ast.Expr) else None
            if isinstance(node, ast.If):  # `if __name__ == "__main__"` or guarded instantiation
                for inner in node.body:
                    if isinstance(inner, ast.Expr) and isinstance(inner.value, ast.Call):
                        yield inner.value
            if isinstance(value, ast.Call):
                yield value

    def _note_instantiation(self, call: ast.Call, classes: dict[str, TestClass]) -> None:
        if _callee_name(call.func) != "instantiate_device_type_tests" or not call.args:
            return
        target = call.args[0]
        cls = classes.get(target.id) if isinstance(target, ast.Name) else None
        if cls is None:
            return
        spec: dict[str, list[str]] = {}
        for keyword in call.keywords:
            if keyword.arg in ("only_for", "except_for"):
                spec[keyword.arg] = _string_constants(keyword.value, self.constants)
        cls.instantiate = spec

    # classes and functions -------------------------------------------------
    def _class(self, node: ast.ClassDef) -> TestClass | None:
        body = flat_body(node.body)
        methods = list({n.name: n for n in reversed(body)  # a name defined twice: the first definition
                        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}.values())[::-1]
        bases = [ast.unparse(b) for b in node.bases]
        # classes without tests are kept too (harness classes, mixins, a test file's nn.Module helpers):
        # tests build them, call them or inherit from them, so a change to one reaches those tests
        header = [node.decorator_list, node.bases, node.keywords,
                  [s for s in body if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]]
        cls = TestClass(name=node.name, lineno=node.lineno, end_lineno=node.end_lineno or node.lineno,
                        bases=bases, decorators=[ast.unparse(d) for d in node.decorator_list],
                        header_fingerprint=hashlib.blake2b(_dump(header).encode(), digest_size=12).hexdigest(),
                        header_names=sorted({n.id for part in header for item in part for n in ast.walk(item)
                                             if isinstance(n, ast.Name)}))
        class_methods = frozenset(m.name for m in methods)
        for method in methods:
            entry = self._function(method, node.name, class_methods)
            (cls.tests if isinstance(entry, TestFunction) else cls.helpers).append(entry)
        return cls

    def _function(self, node, class_name: str | None, class_methods: frozenset[str]) -> TestFunction | HelperFunction:
        """The entry of a test or helper; an unchanged function re-used from the earlier version
        (``placed``) keeps that version's entry, moved to its lines here, when what the entry depends
        on beyond its own text (the file's imports, functions and constants, its class) is the same."""
        context = (self._module_context, class_name, class_methods)
        placement = self.placed.get(id(node))
        if placement is not None and placement.unit.context == context:
            return reuse.shifted(placement.unit.entry, placement.delta)
        make = self._test if node.name.startswith("test") else self._helper
        entry = make(node, class_name, class_methods)
        if placement is not None:  # analysed here with the node's lines in the earlier version
            return reuse.shifted(entry, placement.delta)
        if self.code_memo is not None:
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            self.units.append(reuse.Unit(first, node.end_lineno, node, entry, context))
        return entry

    def _compile(self, node) -> types.CodeType | None:
        """``compile_function(node)``, once per exact definition text in a memo (when scanning both
        versions of a changed file, most of its functions are unchanged and compile once)."""
        if self.code_memo is None:
            return compile_function(node)
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        delta = self.placed[id(node)].delta if id(node) in self.placed else 0  # its lines here
        key = "\n".join(self.lines[first - 1 + delta:node.end_lineno + delta])
        if key not in self.code_memo:
            self.code_memo[key] = compile_function(node)
        return self.code_memo[key]

    def _helper(self, node, class_name: str | None, class_methods: set[str] = frozenset()) -> HelperFunction:
        code = self._compile(node)
        names = _code_names(code) - {"_"} if code is not None else None  # read by three questions below
        return HelperFunction(name=node.name, class_name=class_name, lineno=node.lineno,
                              end_lineno=node.end_lineno or node.lineno, fingerprint=fingerprint(node, code),
                              uses=_shared(sorted(self._uses(node, names, class_methods))),
                              names=_shared(_read_names(node, names)), dynamic=self._dynamic(node, names))

    def _test(self, node, class_name: str | None, class_methods: set[str]) -> TestFunction:
        code = self._compile(node)
        names = _code_names(code) - {"_"} if code is not None else None
        test = TestFunction(name=node.name, class_name=class_name, lineno=node.lineno,
                            end_lineno=node.end_lineno or node.lineno, fingerprint=fingerprint(node, code),
                            decorators=[ast.unparse(d) for d in node.decorator_list],
                            uses=_shared(sorted(self._uses(node, names, class_methods))),
                            names=_shared(_read_names(node, names)), dynamic=self._dynamic(node, names))
        allowed: int | None = None
        for decorator in node.decorator_list:
            name = _callee_name(decorator.func if isinstance(decorator, ast.Call) else decorator)
            if name == "ops" and isinstance(decorator, ast.Call) and decorator.args:
                test.ops = self._ops(decorator.args[0])
                for keyword in decorator.keywords:
                    if keyword.arg == "allowed_dtypes" and isinstance(keyword.value, (ast.Tuple, ast.List, ast.Set)):
                        allowed = len(keyword.value.elts)
                        test.dtypes = [ast.unparse(e).removeprefix("torch.") for e in keyword.value.elts]
            elif name == "dtypes" and isinstance(decorator, ast.Call):
                test.dtypes = [ast.unparse(a).removeprefix("torch.") for a in decorator.args]
            elif name and name.startswith(RESTRICTION_PREFIXES):
                test.restrictions.append(ast.unparse(decorator))
        test.variants = _variants(test, allowed)
        return test

    def _ops(self, expr: ast.expr) -> list[str]:
        excludes = any(isinstance(op, ast.NotIn) for n in ast.walk(expr) if isinstance(n, ast.Compare) for op in n.ops)
        names = [] if excludes else _string_constants(expr, self.constants)  # `not in (...)`: names are exclusions
        if names:
            return sorted(set(names))
        referenced = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
        lists = sorted(referenced & OPINFO_LISTS)
        if lists and "op_db" not in referenced:
            return [f"@{name}" for name in lists]
        return [ALL_OPS]

    def _dynamic(self, node, names: set[str] | None) -> list[str]:
        """Calls whose target static analysis cannot know: ``exec``/``eval`` of code, and
        ``getattr(module, name)`` with a computed name on an imported module (``getattr:<module>``).
        ``names``: what the compiled function reads (None when it did not compile)."""
        if names is not None and not names & DYNAMIC_CALLS:  # the common case: no AST walk
            return []
        found: set[str] = set()
        for inner in ast.walk(node):
            if not isinstance(inner, ast.Call) or not isinstance(inner.func, ast.Name) \
                    or inner.func.id not in DYNAMIC_CALLS:
                continue
            if inner.func.id != "getattr":
                found.add(inner.func.id)
            elif len(inner.args) >= 2 and not isinstance(inner.args[1], ast.Constant):
                owner = ast.unparse(inner.args[0])
                head, _, rest = owner.partition(".")
                if head in self.imports and all(p.isidentifier() for p in owner.split(".")):
                    found.add("getattr:" + ".".join(p for p in (self.imports[head], rest) if p))
        return sorted(found)

    def _uses(self, node, names: set[str] | None, class_methods: set[str]) -> set[str]:
        """Helpers a function calls, references or is decorated with, as change analysis names them.

        Read from the compiled code's names (fast, and a little generous: ``x.helper`` counts as
        ``self.helper``); the AST walk is the fallback when the function did not compile.
        """
        if names is not None:
            return self._uses_from_names(names, class_methods)
        found: set[str] = set()
        for inner in ast.walk(node):
            target = inner.func if isinstance(inner, ast.Call) else None
            if inner in node.decorator_list and not isinstance(inner, ast.Call):
                target = inner
            if target is None:
                continue
            if isinstance(target, ast.Name):
                if target.id in self.imports:
                    found.add(self.imports[target.id])
                elif target.id in self.local_functions:
                    found.add(target.id)
            elif isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                owner = target.value.id
                if owner in ("self", "cls") and target.attr in class_methods:
                    found.add(f"self.{target.attr}")
                elif owner in self.imports:
                    found.add(f"{self.imports[owner]}.{target.attr}")
        return found

    def _uses_from_names(self, names: set[str], class_methods: set[str]) -> set[str]:
        found = {self.imports[n] for n in names if n in self.imports}
        found |= {n for n in names if n in self.local_functions}
        found |= {f"self.{n}" for n in names if n in class_methods}
        for owner in names & self.imports.keys() - {"torch"}:  # module.attr: pair with every other name
            found |= {f"{self.imports[owner]}.{n}" for n in names if n != owner}
        return found


def _assignments(body: list[ast.stmt]) -> dict[str, tuple[str, int, int]]:
    """Module-level ``NAME = value`` (also annotated and augmented): what a test may read as data."""
    found: dict[str, list] = {}
    for node in body:
        if isinstance(node, ast.Assign):
            targets = [t for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
            targets = [node.target]
        else:
            continue
        for target in targets:  # a name assigned twice (NAME += ...): every assignment counts
            entry = found.setdefault(target.id, ["", node.lineno, node.end_lineno or node.lineno])
            entry[0] += _dump(node)
            entry[2] = node.end_lineno or node.lineno
    return {name: (hashlib.blake2b(text.encode(), digest_size=12).hexdigest(), lo, hi)
            for name, (text, lo, hi) in found.items()}


def _exported(body: list[ast.stmt]) -> list[str] | None:
    """The names of a module-level ``__all__`` written as one list of strings (``+=`` more lists
    allowed), or None: none is defined, or it is computed, assigned in two branches, or changed
    in place (``__all__.extend(...)``), which static analysis does not follow."""
    names: list[str] | None = None
    for node in body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) and _is_all(node.value.func.value):
            return None
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if not any(_is_all(t) for t in targets):
            continue
        value = node.value
        added = isinstance(node, ast.AugAssign)
        if len(targets) != 1 or not isinstance(value, (ast.List, ast.Tuple)) or added == (names is None) or \
                not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
            return None
        names = (names or []) + [e.value for e in value.elts]
    return names


def _is_all(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "__all__"


def _shared(names: list[str]) -> list[str]:
    """``names`` as interned strings: the tests of a file repeat the same ``module.name`` uses, and
    pickle writes a string it has seen once as a back-reference (the cached inventory of a release's
    tree is half the size, and loads twice as fast)."""
    return [sys.intern(name) for name in names]


def _read_names(node, names: set[str] | None) -> list[str]:
    """Names a function reads (globals, attributes such as ``self.assertEqual``), for member-level impact."""
    if names is not None:
        return sorted(names)
    return sorted({n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                  | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)})


def _callee_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _string_constants(expr: ast.expr, constants: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
        elif isinstance(node, ast.Name) and node.id in constants:
            out.extend(constants[node.id])
    return out


def _variants(test: TestFunction, allowed: int | None) -> int | None:
    if test.ops is not None:
        if any(op == ALL_OPS or op.startswith("@") for op in test.ops) or allowed is None:
            return None
        return len(test.ops) * allowed
    return max(1, len(test.dtypes))


def scan_file(path: str, text: str, memo: PathMemo | None = None) -> FileInventory:
    """The inventory of one file. ``memo`` is shared by the versions of one path: the first
    version's functions compile once, and a later version parses and analyses only what is not
    among them (see ``reuse``); the inventory is the same as without it."""
    if memo is None:
        tree, error = parse(text, path)
        return _FileScanner(path, tree).scan() if tree is not None else FileInventory(path=path, error=error)
    lines = reuse.source_lines(text)
    if memo.earlier is not None:
        scanned = _scan_around(path, lines, memo)
        if scanned is not None:
            return scanned
    tree, error = parse(text, path)
    if tree is None:
        return FileInventory(path=path, error=error)
    scanner = _FileScanner(path, tree, lines, memo.code)
    inventory = scanner.scan()
    if memo.earlier is None:
        memo.earlier = reuse.ScannedVersion(lines, scanner.units)
    return inventory


def _scan_around(path: str, lines: list[str], memo: PathMemo) -> FileInventory | None:
    """The inventory of a version parsed around the functions it shares with ``memo.earlier``;
    None when it shares none, or the file must be parsed whole (see ``reuse``)."""
    parsed = reuse.parse_around(lines, memo.earlier, _parse_stripped)
    if parsed is None:
        return None
    tree, placed = parsed
    return _FileScanner(path, tree, lines, memo.code, placed).scan()


PARALLEL_MIN_FILES = 48  # below this a process pool costs more than it saves


# (path, text, memo of the path's versions) -> what a scan of one file finds (an inventory, OpInfo entries, ...)
Scanner = Callable[[str, str, PathMemo], Any]


def scan_tests(path: str, text: str, memo: PathMemo) -> FileInventory:
    return scan_file(path, text, memo)


_JOBS: list[tuple[Scanner, str, str]] = []  # the jobs of one run_scans call, inherited by its forked workers
_STORES: list[Path | None] = []  # per job: the blob cache file its result is kept in, if any


def _run_group(group: list[int]) -> list[bytes]:
    """Pickled results: they cross the pipe pickled anyway, and the blob cache keeps these bytes as
    they are, written here by the worker (the parent would write them one by one after the pool)."""
    memo = PathMemo()  # shared by the versions of one path
    results = []
    for i in group:
        data = pickle.dumps(_JOBS[i][0](_JOBS[i][1], _JOBS[i][2], memo), protocol=pickle.HIGHEST_PROTOCOL)
        if _STORES[i] is not None:
            store_pickled(_STORES[i], data)
        results.append(data)
    return results


def run_scans(jobs: list[tuple[Scanner, str, str]]) -> list:
    """Run every (scanner, path, text) job (see ``run_pickled``)."""
    return [pickle.loads(data) for data in run_pickled(jobs)]


def run_pickled(jobs: list[tuple[Scanner, str, str]], stores: list[Path | None] | None = None) -> list[bytes]:
    """Run every (scanner, path, text) job, on every core when there are enough (a release touches hundreds).
    ``stores``: per job, the blob cache file to keep its pickled result in (None: not kept).

    Jobs of the same path (a changed file at both refs) run together, in one worker, sharing a
    ``PathMemo``: the second version re-uses what the first's scan found for unchanged functions.
    Workers are forked, so they read the texts from memory they inherit (only indexes and results
    cross the pipe); the largest groups go first so no core is left with a big file at the end.
    """
    groups: dict[str, list[int]] = {}
    for index, (_, path, _) in enumerate(jobs):
        groups.setdefault(path, []).append(index)
    ordered = sorted(groups.values(), key=lambda group: -sum(len(jobs[i][2]) for i in group))
    _JOBS[:] = jobs
    _STORES[:] = stores or [None] * len(jobs)
    try:
        workers = min(os.cpu_count() or 1, 8)
        if len(jobs) < PARALLEL_MIN_FILES or workers < 2 or "fork" not in multiprocessing.get_all_start_methods() \
                or multiprocessing.current_process().daemon:  # e.g. inside a Celery prefork worker: no children
            results = map(_run_group, ordered)
        else:
            try:
                with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork")) as pool:
                    results = list(pool.map(_run_group, ordered, chunksize=1))
            except (OSError, BrokenProcessPool):  # no processes to be had: scan here instead
                results = map(_run_group, ordered)
        out: list = [None] * len(jobs)
        for group, scanned in zip(ordered, results):
            for index, result in zip(group, scanned):
                out[index] = result
        return out
    finally:
        _JOBS.clear()
        _STORES.clear()


def scan_texts(items: list[tuple[str, str]]) -> list[FileInventory]:
    """The inventories of many (path, text) files (see ``run_scans``)."""
    return run_scans([(scan_tests, path, text) for path, text in items])


@dataclass(frozen=True)
class ScanRequest:
    """Files to scan at one commit: ``paths``, or every test file when None; ``kind`` names the
    scan in the blob cache."""

    sha: str
    paths: list[str] | None = None
    kind: str = "tests"
    scanner: Scanner = scan_tests


def scan_trees(source, requests: list[ScanRequest], *, cache_dir: Path | None = None,
               texts: dict[str, dict[str, str | None]] | None = None) -> list[dict[str, Any]]:
    """path -> scan for each request, every file not in the cache scanned in one ``run_scans``.

    One pass for all of stage 1's files keeps both cores busy to the end and lets a changed
    file's two versions share compiled definitions. With ``cache_dir`` and a source that names
    blobs (git), each result is kept by blob id and path, so the next run scans only files whose
    content changed. ``texts``: per commit, files the caller has read already (not read again).
    """
    cache = open_cache(source, cache_dir)
    found: list[tuple[list[str], dict[str, Any]]] = []
    jobs: list[tuple[Scanner, str, str]] = []
    owners: list[tuple[int, str]] = []  # per job: (request, path)
    stores: list[Path | None] = []  # per job: where the worker keeps its result
    for number, request in enumerate(requests):
        paths = request.paths if request.paths is not None else \
            [p for p in source.list_files(request.sha) if is_test_file(p)]
        results: dict[str, Any] = {}
        blobs: dict[str, str] = {}
        for path in paths:
            blob = source.blob_id(request.sha, path) if cache is not None else None
            if blob is None:
                continue
            blobs[path] = blob
            hit = cache.get(request.kind, blob, path)
            if hit is not None:
                results[path] = hit
        missing = [p for p in paths if p not in results]
        known = (texts or {}).get(request.sha, {})
        read = {**source.read_files(request.sha, [p for p in missing if p not in known]), **known}
        for path in missing:
            if read.get(path) is not None:
                jobs.append((request.scanner, path, read[path]))
                owners.append((number, path))
                stores.append(cache.path(request.kind, blobs[path], path) if path in blobs else None)
        found.append((paths, results))
    for (number, path), data in zip(owners, run_pickled(jobs, stores)):
        found[number][1][path] = pickle.loads(data)
    return [{p: results[p] for p in paths if p in results} for paths, results in found]


def scan_tree(source, sha: str, paths: list[str] | None = None, *, cache_dir: Path | None = None) -> Inventory:
    """Inventory every test file at ``sha`` (or only ``paths``), reading blobs in bulk (see ``scan_trees``)."""
    return Inventory(sha=sha, files=scan_trees(source, [ScanRequest(sha, paths)], cache_dir=cache_dir)[0])
