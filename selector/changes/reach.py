"""What a test runs of its own file: the module functions and class methods it calls, transitively."""
from __future__ import annotations

from selector.inventory.model import FileInventory, HelperFunction


def helper_maps(file_inv: FileInventory, cls) -> tuple[dict[str, HelperFunction], dict[str, HelperFunction]]:
    """(module functions by name, methods of ``cls`` and its local bases by ``self.name``): the same
    for every test of a class, so callers over many tests compute it once per class."""
    module_helpers = {h.name: h for h in file_inv.helpers}
    class_helpers: dict[str, HelperFunction] = {}
    frontier = [cls] if cls is not None else []
    for _ in range(4):  # the class, then local bases (class LocalBase(TestCase) / class TestX(LocalBase))
        for current in frontier:
            for helper in current.helpers:
                class_helpers.setdefault(f"self.{helper.name}", helper)
        frontier = [b for c in frontier for base in c.bases if (b := file_inv.class_named(base)) is not None]
    return module_helpers, class_helpers


def local_helpers(file_inv: FileInventory, cls, test, maps=None) -> list[HelperFunction]:
    """Helpers of the test's file it reaches (module functions; methods of its class and of its base
    classes defined in the file, a few levels up), in the order found. ``maps``: ``helper_maps``."""
    module_helpers, class_helpers = maps or helper_maps(file_inv, cls)
    found, seen, pending = [], set(), list(test.uses)
    while pending:
        name = pending.pop()
        helper = module_helpers.get(name) or class_helpers.get(name)
        if helper is None or name in seen:
            continue
        seen.add(name)
        found.append(helper)
        pending += helper.uses
    return found
