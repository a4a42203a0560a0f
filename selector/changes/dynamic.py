"""Where static analysis cannot be sure, select conservatively and say why.

Three shapes hide what a test runs from an AST reader: ``from M import *`` (any name may come
from M), ``getattr(M, name)`` with a computed name (any definition of M), and ``exec``/``eval``
of code (anything the file can import). A test is selected when such a call, in the test or in a
helper of its own file it reaches, meets a module this change touched.
"""
from __future__ import annotations

from selector.changes.book import CandidateBook
from selector.changes.reach import local_helpers
from selector.inventory.model import FileInventory, Inventory
from selector.model import Evidence

# torch re-exports torch.functional (torch.norm, torch.stft, ...): a getattr on torch reaches it
REEXPORTS = {"torch": ("torch.functional",)}


def conservative(inventory: Inventory, changed: dict[str, Evidence], book: CandidateBook, *,
                 star_only: dict[str, Evidence] | None = None) -> None:
    """``changed``: module name -> evidence of its first changed hunk, for every module whose
    definitions changed in this diff; ``star_only``: the same for test files whose module-level
    definitions changed, which count only for files star-importing them (a test file's own tests
    are not in ``inventory``'s files as copies: their names resolve in their own module)."""
    star_changed = changed | (star_only or {})
    if not star_changed:
        return
    for path, file_inv in sorted(inventory.files.items()):
        if not file_inv.star_imports and not _any_dynamic(file_inv):  # nearly every file: nothing to doubt
            continue
        stars = [m for m in file_inv.star_imports if m in star_changed]
        imported = sorted({m for m in changed if _imports(file_inv, m)})
        for cls, test in [(c, t) for c in file_inv.classes for t in c.tests] + [(None, t) for t in file_inv.functions]:
            for module in stars:
                book.add(path, test, "helper", _why(star_changed[module], f"{path} does `from {module} import *` and "
                                                    f"{module} changed: names it brings in cannot be traced"))
                break
            for marker in _markers(file_inv, cls, test):
                why = _dynamic_reason(marker, changed, imported)
                if why:
                    module, text = why
                    book.add(path, test, "helper", _why(changed[module], text))
                    break


def _any_dynamic(file_inv: FileInventory) -> bool:
    functions = [*file_inv.functions, *file_inv.helpers] + [f for c in file_inv.classes for f in c.tests + c.helpers]
    return any(f.dynamic for f in functions)


def _why(evidence: Evidence, text: str) -> Evidence:
    return evidence.model_copy(update={"detail": f"conservative: {text}"})


def _dynamic_reason(marker: str, changed: dict[str, Evidence], imported: list[str]) -> tuple[str, str] | None:
    if marker.startswith("getattr:"):
        owner = marker.removeprefix("getattr:")
        for module in (owner, *REEXPORTS.get(owner, ())):
            if module in changed:
                return module, (f"calls getattr({owner}, <computed name>) and {module} changed: "
                                "which definition it reaches cannot be told statically")
        return None
    if imported:  # exec / eval: the code may use anything the file imports
        return imported[0], (f"calls {marker}() and {imported[0]}, which its file imports, changed: "
                             "the code it runs cannot be traced")
    return None


def _imports(file_inv: FileInventory, module: str) -> bool:
    return module in file_inv.star_imports or any(
        target == module or target.startswith(module + ".") or module in REEXPORTS.get(target, ())
        for target in file_inv.imports.values())


def _markers(file_inv: FileInventory, cls, test) -> list[str]:
    """The dynamic calls a test makes itself or through helpers of its file, transitively."""
    found = set(test.dynamic)
    for helper in local_helpers(file_inv, cls, test):
        found |= set(helper.dynamic)
    return sorted(found)
