"""OpInfo definition files: which entries (name + variant) a diff adds, removes or modifies."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

from selector.inventory.scan import OPINFO_LISTS, fingerprint, parse

# Which named op list an OpInfo subclass lands in, for tests written as @ops(unary_ufuncs) etc.
INFO_LISTS = {"UnaryUfuncInfo": "@unary_ufuncs", "BinaryUfuncInfo": "@binary_ufuncs",
              "ReductionOpInfo": "@reduction_ops", "SpectralFuncInfo": "@spectral_funcs",
              "ShapeFuncInfo": "@shape_funcs", "ForeachFuncInfo": "@foreach_unary_op_db"}


@dataclass
class OpEntry:
    name: str
    variant: str
    info_class: str
    lineno: int
    end_lineno: int
    fingerprint: str
    refs: set[str] = field(default_factory=set)  # module-level names the entry uses (sample_inputs_*)
    via: list[str] = field(default_factory=list)  # changed functions that make an unchanged entry modified
    aliases: tuple[str, ...] = ()  # aliases=('special.softmax', ...): other names tests reach it by

    @property
    def label(self) -> str:
        """``name`` or ``name.variant``; the instantiated suffix is ``name`` with '.'->'_' + '_variant'."""
        return f"{self.name}.{self.variant}" if self.variant else self.name


@dataclass
class OpInfoFile:
    entries: dict[str, OpEntry]
    functions: dict[str, str]  # module-level function -> fingerprint
    function_refs: dict[str, set[str]]
    error: str | None = None
    function_lines: dict[str, tuple[int, int]] = field(default_factory=dict)


def scan_opinfo(path: str, text: str | None) -> OpInfoFile:
    if text is None:
        return OpInfoFile({}, {}, {})
    tree, error = parse(text, path)
    if tree is None:
        return OpInfoFile({}, {}, {}, error=error)
    functions = {n.name: fingerprint(n) for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    function_refs = {n.name: {m.id for m in ast.walk(n) if isinstance(m, ast.Name)} & functions.keys()
                     for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    lines = {n.name: (n.lineno, n.end_lineno or n.lineno)
             for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    entries: dict[str, OpEntry] = {}
    expanded: set[int] = set()  # calls already expanded by their comprehension (walk sees parents first)
    names = set(functions)  # once: the walk below visits every node of a 20k-line file
    for node in ast.walk(tree):
        if id(node) in expanded:
            continue
        generated = _generated(node, names)
        if generated:
            expanded.add(id(node.elt))
        for entry in generated or [_entry(node, names)]:
            if entry is not None:
                entries.setdefault(entry.label, entry)
    return OpInfoFile(entries, functions, function_refs, function_lines=lines)


def _generated(node: ast.AST, functions: set[str]) -> list[OpEntry] | None:
    """Entries a comprehension makes from one call: ``*(Info('polygamma', variant_test_name=f'n_{n}') for n in (1, 2))``.

    The loop values must be literal (a tuple/list of constants or ``range`` of constants); each
    value is substituted into the f-string names. None when ``node`` is not such a comprehension.
    """
    if not isinstance(node, (ast.GeneratorExp, ast.ListComp)) or len(node.generators) != 1:
        return None
    loop = node.generators[0]
    if not isinstance(loop.target, ast.Name) or loop.ifs or not isinstance(node.elt, ast.Call):
        return None
    values = _literal_values(loop.iter)
    if values is None:
        return None
    out = []
    for value in values:
        entry = _entry(node.elt, functions, {loop.target.id: value})
        if entry is not None:
            entry.fingerprint += f":{value!r}"
            out.append(entry)
    return out or None


def _literal_values(expr: ast.expr) -> list | None:
    if isinstance(expr, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) for e in expr.elts):
        return [e.value for e in expr.elts]
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "range" \
            and all(isinstance(a, ast.Constant) and isinstance(a.value, int) for a in expr.args) and 1 <= len(expr.args) <= 3:
        return list(range(*[a.value for a in expr.args]))
    return None


def _static_string(expr: ast.expr, names: dict) -> str | None:
    """A constant string, or an f-string whose fields are names bound in ``names``."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.JoinedStr):
        parts = []
        for part in expr.values:
            if isinstance(part, ast.Constant):
                parts.append(str(part.value))
            elif isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) \
                    and part.value.id in names and part.format_spec is None and part.conversion == -1:
                parts.append(str(names[part.value.id]))
            else:
                return None
        return "".join(parts)
    return None


def _entry(node: ast.AST, functions: set[str], names: dict | None = None) -> OpEntry | None:
    if not isinstance(node, ast.Call):
        return None
    names = names or {}
    func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
    if not func or not func.endswith("Info") or func == "DecorateInfo":
        return None
    name = _static_string(node.args[0], names) if node.args else None
    variant = ""
    aliases: tuple[str, ...] = ()
    for keyword in node.keywords:
        if keyword.arg == "name":
            name = _static_string(keyword.value, names)
        elif keyword.arg == "variant_test_name":
            variant = _static_string(keyword.value, names)
            if variant is None:  # computed from something we cannot evaluate: keep it apart from the base entry
                variant = "<computed>"
        elif keyword.arg == "aliases" and isinstance(keyword.value, (ast.Tuple, ast.List)):
            aliases = tuple(e.value for e in keyword.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str))
    if not isinstance(name, str):
        return None
    if func == "ForeachFuncInfo":  # upstream names them _foreach_<op>: kept apart from the op's own entry
        name = name if name.startswith("_foreach_") else f"_foreach_{name}"
    refs = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & functions
    return OpEntry(name=name, variant=variant, info_class=func, lineno=node.lineno,
                   end_lineno=node.end_lineno or node.lineno, fingerprint=fingerprint(node), refs=refs,
                   aliases=aliases)


def diff_entries(old: OpInfoFile, new: OpInfoFile) -> dict[str, list[OpEntry]]:
    """{"added": [...], "removed": [...], "modified": [...]}; a changed sample function modifies its entries."""
    changed_functions = {f for f in set(old.functions) | set(new.functions) if old.functions.get(f) != new.functions.get(f)}
    edited = set(changed_functions)  # changed in their own text: where the hunk is
    # a helper that calls a changed helper is changed too
    grew = True
    while grew:
        grew = False
        for name, refs in new.function_refs.items():
            if name not in changed_functions and refs & changed_functions:
                changed_functions.add(name)
                grew = True
    out: dict[str, list[OpEntry]] = {"added": [], "removed": [], "modified": []}
    for label, entry in sorted(new.entries.items()):
        before = old.entries.get(label)
        if before is None:
            out["added"].append(entry)
        elif before.fingerprint != entry.fingerprint:
            out["modified"].append(entry)
        elif entry.refs & changed_functions:
            via = sorted(entry.refs & changed_functions)
            # the edited function first: a caller changed only through it has no hunk of its own
            if set(via) & edited:
                entry.via = sorted(via, key=lambda f: (f not in edited, f))
            else:
                root = _edited_root(via, edited, new.function_refs)
                entry.via = [root] + [f for f in via if f != root]
            out["modified"].append(entry)
    out["removed"] = [e for label, e in sorted(old.entries.items()) if label not in new.entries]
    return out


def _edited_root(via: list[str], edited: set[str], refs: dict[str, set[str]]) -> str:
    """The first function, from ``via`` down the calls, whose own text changed."""
    seen, pending = set(), list(via)
    while pending:
        name = pending.pop(0)
        if name in edited:
            return name
        if name not in seen:
            seen.add(name)
            pending += sorted(refs.get(name, set()))
    return via[0]


# Entries that live in their own database, not in op_db: only tests over that database reach them.
OWN_DATABASES = {"ForeachFuncInfo": ("@foreach_unary_op_db", "@foreach_binary_op_db"), "RefInfo": ("@python_ref_db",)}


def own_database(info_class: str | None) -> tuple[str, ...] | None:
    if not info_class:
        return None
    if info_class == "ForeachFuncInfo":
        return OWN_DATABASES["ForeachFuncInfo"]
    return OWN_DATABASES["RefInfo"] if info_class.endswith("RefInfo") else None


def test_covers_op(test_ops: list[str] | None, entry_name: str, info_class: str | None = None) -> bool:
    """Whether an @ops test with op list ``test_ops`` generates variants of OpInfo ``entry_name``."""
    if test_ops is None:
        return False
    databases = own_database(info_class)
    if databases is not None:  # foreach / Python-reference entries: never part of op_db ("*")
        named = [op for op in test_ops if op.startswith("@")]
        return entry_name in test_ops or any(op in databases or op[1:] not in OPINFO_LISTS for op in named)
    if entry_name in test_ops or "*" in test_ops:
        return True
    named = INFO_LISTS.get(info_class or "")
    if named and named in test_ops:
        return True
    # an unknown named list (@something): cannot tell, so be safe and include it; the foreach and
    # Python-reference databases never hold op_db entries
    known = set(INFO_LISTS.values()) | {db for dbs in OWN_DATABASES.values() for db in dbs}
    return any(op.startswith("@") and op not in known for op in test_ops)


def covering_tests(inventory, entry_name: str, info_class: str | None = None) -> list:
    """The (path, test) pairs of ``inventory``'s @ops tests that generate variants of ``entry_name``.

    A tree has thousands of @ops tests but few distinct op lists: each list is asked once, so a
    500-entry OpInfo diff costs 500 x (distinct lists), not 500 x (tests).
    """
    return [pair for ops, pairs in inventory.op_test_groups().items()
            if test_covers_op(list(ops), entry_name, info_class) for pair in pairs]
