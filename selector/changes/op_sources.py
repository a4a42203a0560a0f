"""Op sources outside the test tree: which ops a changed reference, decomposition or Python implementation is.

For an out-of-tree backend a new or changed decomposition routes an op through kernels the device
may not have, so a change here selects that op's tests. Definitions are module-level functions
and assignments; a definition's ops come from the ``aten.X`` names in its decorators and body
statements at module level (``@register_decomposition(aten._softmax)``) and, in the files that
define the Python API or its references, from its own name in that file's namespace
(``def gelu`` in ``torch/nn/functional.py`` -> ``nn.functional.gelu``).
"""
from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass, field

from selector.changes.native_yaml import base_op
from selector.inventory.scan import fingerprint, parse

OP_SOURCE_PATTERNS = ("torch/_refs/*.py", "torch/_decomp/*.py", "torch/functional.py", "torch/nn/functional.py")
# where a definition's own name is an op name, and under which OpInfo namespace
NAMESPACES = {"torch/functional.py": "", "torch/nn/functional.py": "nn.functional", "torch/_refs/__init__.py": "",
              "torch/_refs/_conversions.py": "", "torch/_refs/fft.py": "fft",
              "torch/_refs/nn/functional/__init__.py": "nn.functional", "torch/_refs/special/__init__.py": "special",
              "torch/_refs/linalg/__init__.py": "linalg"}
WHAT = {"torch/_refs": "Python reference", "torch/_decomp": "decomposition"}


def is_op_source(path: str) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in OP_SOURCE_PATTERNS)


def what_it_is(path: str) -> str:
    return next((w for prefix, w in WHAT.items() if path.startswith(prefix + "/")), "Python implementation")


@dataclass
class OpDefinition:
    name: str
    lineno: int
    end_lineno: int
    fingerprint: str
    aten: list[str] = field(default_factory=list)  # aten ops its decorators / registration name
    reads: set[str] = field(default_factory=set)  # module-level names it reads (helpers it calls)


@dataclass
class OpSourceFile:
    definitions: dict[str, OpDefinition]
    error: str | None = None


def scan_op_source(path: str, text: str | None) -> OpSourceFile:
    if text is None:
        return OpSourceFile({})
    tree, error = parse(text, path)
    if tree is None:
        return OpSourceFile({}, error=error)
    out: dict[str, OpDefinition] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names, aten_from = [node.name], node.decorator_list
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names, aten_from = [t.id for t in targets if isinstance(t, ast.Name)], [node.value]
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):  # register_decomposition(aten.x)(fn)
            # keyed by its normalised text, not its line: lines move when anything above them changes
            names, aten_from = [ast.unparse(node.value)], [node.value]
        else:
            continue
        aten = sorted({op for expr in aten_from if expr is not None for op in _aten_names(expr)})
        reads = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        for name in names:
            previous = out.get(name)
            digest = fingerprint(node)
            out[name] = OpDefinition(name, previous.lineno if previous else node.lineno,
                                     node.end_lineno or node.lineno,
                                     (previous.fingerprint if previous else "") + digest,
                                     sorted(set(aten) | set(previous.aten if previous else [])),
                                     reads | (previous.reads if previous else set()))
    return OpSourceFile(out)


def _aten_names(expr: ast.AST) -> set[str]:
    """``aten.X``, ``aten.X.overload``, ``torch.ops.aten.X``: the op X (inplace/out folded to the base op)."""
    found = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Attribute) and (isinstance(node.value, ast.Name) and node.value.id == "aten"
                                                or isinstance(node.value, ast.Attribute) and node.value.attr == "aten"):
            found.add(base_op(node.attr))
    return found


def changed_definitions(old: OpSourceFile, new: OpSourceFile) -> dict[str, tuple[OpDefinition, str | None]]:
    """name -> (definition, changed helper it reaches or None) for every definition that changed or
    reads (transitively, within the file) one that did. Removed definitions count, on their old lines."""
    names = set(old.definitions) | set(new.definitions)
    changed = {n for n in names if _digest(old, n) != _digest(new, n)}
    out: dict[str, tuple[OpDefinition, str | None]] = {}
    for name in sorted(changed):
        definition = new.definitions.get(name) or old.definitions[name]
        out[name] = (definition, None)
    grew = True
    while grew:  # a definition calling a changed helper (``_make_elementwise_unary_reference``) changes too
        grew = False
        for name, definition in new.definitions.items():
            if name in out:
                continue
            hit = sorted(definition.reads & out.keys())
            if hit:
                root = out[hit[0]][1] or hit[0]
                out[name] = (definition, root)
                grew = True
    return out


def _digest(side: OpSourceFile, name: str) -> str | None:
    definition = side.definitions.get(name)
    return definition.fingerprint if definition else None


def op_names(path: str, definition: OpDefinition) -> list[str]:
    """OpInfo-style names a definition of ``path`` implements: its aten ops and, where the file's
    names are the API, its own name under the file's namespace (``nn.functional.gelu``; also the bare
    name, since many OpInfos are named after the torch function: ``softmax``)."""
    out = set(definition.aten)
    # another module of the _refs package: its references are mostly torch-level ops (torch.sum)
    namespace = NAMESPACES.get(path, "" if path.startswith("torch/_refs/") else None)
    name = definition.name
    if namespace is not None and name.isidentifier() and not (name.startswith("__") and name.endswith("__")):
        op = base_op(name)
        out.add(f"{namespace}.{op}" if namespace else op)
        out.add(op)
    return sorted(out)
