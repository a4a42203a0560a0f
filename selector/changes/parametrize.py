"""What changed in a test's ``@parametrize`` values, said in its reason.

A value added to ``@parametrize("n", [1, 2])`` makes new variants (``test_x_n_3``) that have no
counterpart at the old ref, and their names come from upstream's name functions: stage 1 selects
the whole test rather than guess a variant name and drop the one that fails. The reason says so.
A removed or edited value selects the test that reads the list, nothing beyond it.
"""
from __future__ import annotations

import ast

NAMES = ("parametrize", "parametrize_test")  # torch.testing._internal.common_utils
WHOLE_TEST = ("every variant of the test is selected: variants of new values have no counterpart at the "
              "old ref to compare with")


def _parse(text: str) -> ast.expr | None:
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def _callee(node: ast.expr) -> str | None:
    func = node.func if isinstance(node, ast.Call) else None
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _values(node: ast.expr | None) -> list[str] | None:
    """The unparsed elements of a list/tuple/set literal, None for any other shape."""
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return [ast.unparse(e) for e in node.elts]
    return None


def values_delta(before: ast.expr | None, after: ast.expr | None) -> tuple[list[str], list[str]] | None:
    """(values added, values removed) between two literal lists, None when either is not one."""
    old, new = _values(before), _values(after)
    if old is None or new is None:
        return None
    return [v for v in new if v not in old], [v for v in old if v not in new]


def describe(argument: str, delta: tuple[list[str], list[str]] | None, through: str = "") -> str:
    """``@parametrize("n")`` values ``3`` added (through SIZES): every variant ... selected."""
    where = f"its @parametrize({argument}) values{through}"
    if delta is None:
        return f"{where} changed; every variant of the test is selected"
    added, removed = delta
    parts = ([f"{', '.join(added)} added"] if added else []) + ([f"{', '.join(removed)} removed"] if removed else [])
    what = "; ".join(parts) or "edited (same values, another order or form)"
    tail = WHOLE_TEST if added else "the test is selected, no other test reads the list"
    return f"{where}: {what}; {tail}"


def decorator_change(before: list[str], after: list[str]) -> str | None:
    """The reason text when a test's decorators differ only in the values of ``@parametrize`` calls
    (same argument names, same other decorators); None otherwise."""
    if len(before) != len(after):
        return None
    found = []
    for old_text, new_text in zip(before, after):
        if old_text == new_text:
            continue
        old, new = _parse(old_text), _parse(new_text)
        if _callee(old) not in NAMES or _callee(new) not in NAMES or len(old.args) < 2 or len(new.args) < 2 \
                or ast.dump(old.args[0]) != ast.dump(new.args[0]):
            return None
        found.append(describe(ast.unparse(new.args[0]), values_delta(old.args[1], new.args[1])))
    return "; ".join(found) if found else None


def reading(decorators: list[str], name: str) -> str | None:
    """The argument of the ``@parametrize`` decorator whose values are the module-level ``name``
    (``@parametrize("n", SIZES)``), None when no such decorator reads it."""
    for text in decorators:
        node = _parse(text)
        if _callee(node) in NAMES and len(node.args) >= 2 and \
                any(isinstance(n, ast.Name) and n.id == name or isinstance(n, ast.Attribute) and n.attr == name
                    for n in ast.walk(node.args[1])):
            return ast.unparse(node.args[0])
    return None


def assignment_delta(old_text: str | None, new_text: str | None, lines_old: tuple[int, int] | None,
                     lines_new: tuple[int, int] | None) -> tuple[list[str], list[str]] | None:
    """``values_delta`` of a module-level ``NAME = [...]`` at both refs (given its lines on each side)."""
    values = []
    for text, lines in ((old_text, lines_old), (new_text, lines_new)):
        if text is None or lines is None:
            return None
        try:
            module = ast.parse("\n".join(text.splitlines()[lines[0] - 1:lines[1]]))
        except SyntaxError:
            return None
        statement = module.body[0] if len(module.body) == 1 else None
        values.append(statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None)
    return values_delta(*values)
