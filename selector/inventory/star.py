"""Tests a file runs through ``from test_x import *``.

pytest collects every test class and function in a module's namespace, imported ones included, so
``test/test_jit_legacy.py`` (``sys.argv.append("--jit-executor=legacy")``, ``from test_jit import *``)
runs every test of ``test_jit.py`` again under its own id and its own setup. The scan reads one file
at a time and sees none of them; this module lists them, per importing file, from the other files'
inventories. Only test files of the tree are followed (a helper module's classes are not tests).
"""
from __future__ import annotations

import dataclasses

from selector.inventory.model import FileInventory, TestClass, TestFunction
from selector.inventory.scan import module_name


@dataclasses.dataclass(frozen=True)
class StarCopy:
    """One test ``path`` runs because it star-imports ``origin`` (directly or through another star import)."""

    path: str
    origin: str
    module: str  # what ``path`` star-imports, as written
    cls: TestClass | None
    test: TestFunction


def star_copies(files: dict[str, FileInventory]) -> dict[str, list[StarCopy]]:
    """importing path -> the tests it collects from the test files it star-imports, transitively.

    A star import takes the names of the module's ``__all__`` when it lists them, else every name
    not starting with ``_``; through a chain of star imports, each module's rule applies. A class
    or function the importing file defines itself (or an earlier import brought) wins, as it does
    at import time."""
    by_module = {module_name(path): path for path in files}
    out: dict[str, list[StarCopy]] = {}
    for path, inv in sorted(files.items()):
        if not inv.star_imports:
            continue
        taken = {c.name for c in inv.classes} | {f.name for f in inv.functions}
        copies: list[StarCopy] = []
        seen = {path}
        # (module as the importing file wrote it, module, what each module on the way exports)
        pending: list[tuple[str, str, tuple]] = [(m, m, ()) for m in inv.star_imports]
        while pending:
            written, module, outer = pending.pop(0)
            origin = by_module.get(module)
            if origin is None or origin in seen or files[origin].error:
                continue
            seen.add(origin)
            rules = (files[origin].exported, *outer)
            for cls, where in [(c, origin) for c in files[origin].classes] + _imported_classes(files, by_module, origin):
                if _passes(cls.name, rules) and cls.name not in taken:
                    taken.add(cls.name)
                    copies += [StarCopy(path, where, written, cls, test) for test in cls.tests]
            for test in files[origin].functions:
                if _passes(test.name, rules) and test.name not in taken:
                    taken.add(test.name)
                    copies.append(StarCopy(path, origin, written, None, test))
            pending += [(written, m, rules) for m in files[origin].star_imports]
        if copies:
            out[path] = copies
    return out


def _passes(name: str, exports: tuple) -> bool:
    """Whether ``name`` survives every star import on the way (``exports``: each module's ``__all__``
    or None for its public names)."""
    return all(name in names if names is not None else not name.startswith("_") for names in exports)


def _imported_classes(files: dict[str, FileInventory], by_module: dict[str, str], origin: str) -> list:
    """Test classes ``origin`` imports by name from other test files (``test_jit.py``: ``from
    jit.test_tracer import TestTracer``): they are in its namespace, so a star import passes them on.
    Aliased imports are left out (pytest would name the class by its alias)."""
    out = []
    for local, target in sorted(files[origin].imports.items()):
        module, _, name = target.rpartition(".")
        where = by_module.get(module)
        cls = files[where].class_named(name) if where is not None and where != origin else None
        if cls is not None and local == name:
            out.append((cls, where))
    return out


def with_star_imports(files: dict[str, FileInventory], copies: dict[str, list[StarCopy]]) -> dict[str, FileInventory]:
    """``files`` where each importing file also holds the classes and functions it collects through
    star imports (new FileInventory objects; the scanned ones, possibly cached, are left as they are)."""
    out = dict(files)
    for path, found in copies.items():
        classes = {id(c.cls): c.cls for c in found if c.cls is not None}
        inv = files[path]
        out[path] = dataclasses.replace(inv, classes=inv.classes + list(classes.values()),
                                        functions=inv.functions + [c.test for c in found if c.cls is None])
    return out
