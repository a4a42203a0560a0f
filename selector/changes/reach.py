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


def _reached(maps, names: list[str]) -> list[HelperFunction]:
    """The helpers ``names`` call, transitively, in the order found (``maps``: ``helper_maps``)."""
    module_helpers, class_helpers = maps
    found, seen, pending = [], set(), list(names)
    while pending:
        name = pending.pop()
        helper = module_helpers.get(name) or class_helpers.get(name)
        if helper is None or name in seen:
            continue
        seen.add(name)
        found.append(helper)
        pending += helper.uses
    return found


class HelperReach:
    """What the tests of one class (or of the module level) reach of their file: module functions,
    methods of the class and of its base classes defined in the file, transitively. What each helper
    reaches is worked out once: a release's tree has 15k tests over a few hundred classes."""

    def __init__(self, file_inv: FileInventory, cls) -> None:
        self.maps = helper_maps(file_inv, cls)
        self._memo: dict[tuple[str, str], frozenset[str]] = {}

    def names(self, test) -> set[str]:
        """Every name the test reads, itself and through the helpers of its file it reaches."""
        return self._union(test, "names")

    def dynamic(self, test) -> list[str]:
        """The dynamic calls (``HelperFunction.dynamic``) the test makes, itself or through its file's helpers."""
        return sorted(self._union(test, "dynamic"))

    def _union(self, test, field: str) -> set[str]:
        module_helpers, class_helpers = self.maps
        out = set(getattr(test, field))
        for use in test.uses:
            if use in module_helpers or use in class_helpers:
                key = (use, field)
                if key not in self._memo:
                    self._memo[key] = frozenset().union(*(getattr(h, field) for h in _reached(self.maps, [use])))
                out |= self._memo[key]
        return out
