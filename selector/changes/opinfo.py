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
    function_refs = {n.name: {m.id for m in ast.walk(n) if isinstance(m, ast.Name)} & set(functions)
                     for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    lines = {n.name: (n.lineno, n.end_lineno or n.lineno)
             for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    entries: dict[str, OpEntry] = {}
    for node in ast.walk(tree):
        entry = _entry(node, set(functions))
        if entry is not None:
            entries.setdefault(entry.label, entry)
    return OpInfoFile(entries, functions, function_refs, function_lines=lines)


def _entry(node: ast.AST, functions: set[str]) -> OpEntry | None:
    if not isinstance(node, ast.Call):
        return None
    func = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
    if not func or not func.endswith("Info") or func == "DecorateInfo":
        return None
    name = None
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        name = node.args[0].value
    variant = ""
    for keyword in node.keywords:
        if keyword.arg == "name" and isinstance(keyword.value, ast.Constant):
            name = keyword.value.value
        elif keyword.arg == "variant_test_name" and isinstance(keyword.value, ast.Constant):
            variant = keyword.value.value
    if not isinstance(name, str):
        return None
    if func == "ForeachFuncInfo":  # upstream names them _foreach_<op>: kept apart from the op's own entry
        name = name if name.startswith("_foreach_") else f"_foreach_{name}"
    refs = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} & functions
    return OpEntry(name=name, variant=variant, info_class=func, lineno=node.lineno,
                   end_lineno=node.end_lineno or node.lineno, fingerprint=fingerprint(node), refs=refs)


def diff_entries(old: OpInfoFile, new: OpInfoFile) -> dict[str, list[OpEntry]]:
    """{"added": [...], "removed": [...], "modified": [...]}; a changed sample function modifies its entries."""
    changed_functions = {f for f in set(old.functions) | set(new.functions) if old.functions.get(f) != new.functions.get(f)}
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
            entry.via = sorted(entry.refs & changed_functions)
            out["modified"].append(entry)
    out["removed"] = [e for label, e in sorted(old.entries.items()) if label not in new.entries]
    return out


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
    # an unknown named list (@something): cannot tell, so be safe and include it
    return any(op.startswith("@") and op not in INFO_LISTS.values() for op in test_ops)
