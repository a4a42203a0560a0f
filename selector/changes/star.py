"""A test a file runs through ``from test_x import *`` is selected whenever the original is.

``test_jit_legacy.py`` runs ``test_jit.py``'s tests under the legacy executor: the code is the
same, so every reason that selects ``test_jit.py::TestJit::test_x`` (its body, a helper, an OpInfo
entry, a relevance rule) selects ``test_jit_legacy.py::TestJit::test_x`` too, and a removal removes both.
"""
from __future__ import annotations

import ast

from selector.changes.book import CandidateBook
from selector.changes.report import RemovedTest
from selector.inventory.model import FileInventory
from selector.inventory.scan import strip_docstrings
from selector.inventory.star import StarCopy
from selector.model import Evidence

SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def module_code_changed(before: str | None, after: str | None) -> bool:
    """Whether a file's module-level code outside its functions and classes changed (what runs at
    import around the star import: ``sys.argv.append("--jit-executor=legacy")``); docstrings and
    formatting do not count, a file that does not parse does."""
    dumps = []
    for text in (before, after):
        try:
            tree = ast.parse(text or "")
        except (SyntaxError, ValueError):
            return True
        strip_docstrings(tree)
        dumps.append([ast.dump(s) for s in tree.body if not isinstance(s, SCOPES)])
    return dumps[0] != dumps[1]


def mirror_star_copies(copies: dict[str, list[StarCopy]], book: CandidateBook, removed: list[RemovedTest],
                       files: dict[str, FileInventory], importers: dict[str, Evidence] | None = None) -> None:
    """Give each star-imported copy its original's reasons (run last: every other rule has spoken);
    ``files``: the scanned files, whose own classes and functions hide imported ones; ``importers``:
    evidence for the importing files whose module-level code changed (every copy there runs it)."""
    for path, evidence in sorted((importers or {}).items()):
        for copy in copies.get(path, []):
            book.add(path, copy.test, "modified", evidence.model_copy(update={
                "detail": f"module-level code of {path} changed: it runs before every test it star-imports"}))
    shared: dict[tuple[str, str], list[Evidence]] = {}
    removed_by_file: dict[str, list[RemovedTest]] = {}
    for item in removed:
        removed_by_file.setdefault(item.test_id.split("::", 1)[0], []).append(item)
    for path, found in sorted(copies.items()):
        for copy in found:
            original = book.get(copy.test.test_id(copy.origin))
            if original is None:
                continue
            change, previous = original.change, None
            if original.previous_id:  # renamed or moved within the origin file: the copy was renamed too
                if original.previous_id == copy.test.test_id(path):  # moved out of this file, run here still
                    change = "modified"
                elif original.previous_id.startswith(copy.origin + "::"):
                    previous = path + original.previous_id[len(copy.origin):]
                else:
                    change = "added"
            key = (original.test_id, copy.module)  # test_jit_{legacy,profiling,simple}.py share the reasons
            if key not in shared:
                note = f"runs {original.test_id} (its file star-imports {copy.module})"
                shared[key] = [r.model_copy(update={"detail": f"{note}: {r.detail}"}) for r in original.reasons]
            whole = book.whole(original.test_id)
            for reason in shared[key]:
                book.add(path, copy.test, change, reason, op=None if whole else reason.op, previous_id=previous)
        origins = {c.origin: c.module for c in found}
        for origin, module in sorted(origins.items()):
            own = {c.name for c in files[path].classes} | {f.name for f in files[path].functions}
            for item in removed_by_file.get(origin, []):
                if item.test_id[len(origin) + 2:].split("::", 1)[0] in own or item.test_id.startswith(f"{origin}::_"):
                    continue  # the importing file defines that name itself: its own test, not the import
                removed.append(RemovedTest(path + item.test_id[len(origin):],
                                           f"{item.reason} (in {origin}, which it star-imports as {module})",
                                           item.evidence, op=item.op))
