"""From a changed op (an op source definition or a YAML entry) to the tests of that op.

The tests of an op are the variants of its OpInfo entries (``@ops`` tests generating them, scoped
to that op) and the tests whose code names the op (``torch.softmax``, ``F.softmax``, ``x.softmax``).
"""
from __future__ import annotations

import builtins
import itertools
import re
from collections.abc import Callable

from selector.changes.book import CandidateBook
from selector.changes.opinfo import OpEntry, test_covers_op
from selector.changes.reach import HelperReach
from selector.inventory.model import Inventory
from selector.model import Evidence

BACKWARD_SUFFIXES = ("_backward_data", "_backward")
# Op names code also uses for other things (builtins, container and module methods, torch.jit.trace):
# a test reading one of these names the op only where its text says torch.X / F.X / functional.X ...
AMBIGUOUS = set(dir(builtins)) | {"copy", "values", "items", "keys", "index", "count", "get", "update", "append",
                                  "extend", "pop", "format", "join", "replace", "strip", "trace", "equal", "put",
                                  "random", "size", "item", "to", "data", "grad", "apply", "fill", "zero", "select",
                                  "resize", "set", "sort", "split", "view", "type", "detach", "backward", "record"}
QUALIFIED = r"\b(?:torch|F|functional|special|linalg|fft)\.{name}\b"


def related_names(op: str) -> list[str]:
    """The names whose tests a change to ``op`` reaches: itself, the public op a private aten op
    implements (``_softmax`` -> ``softmax``), the forward op of a backward (``gelu_backward`` ->
    ``gelu``), and the Python reference entry (``_refs.softmax``)."""
    names = {op}
    for suffix in BACKWARD_SUFFIXES:
        if op.endswith(suffix) and len(op) > len(suffix):
            names.add(op[:-len(suffix)])
    for name in list(names):
        if name.startswith("_") and not name.startswith("__") and len(name) > 1:
            names.add(name[1:])
    names |= {f"_refs.{n}" for n in names if not n.startswith("_refs.")}
    return sorted(names)


class OpIndex:
    """Who tests which op, at the to-ref: OpInfo entries by name and alias, tests by the names they read.

    ``entries`` is loaded only when the first op change needs it (reading the OpInfo files of a real
    tree costs seconds cold).
    """

    def __init__(self, inventory: Inventory, entries: Callable[[], list[OpEntry]],
                 read: Callable[[list[str]], dict[str, str | None]] | None = None,
                 kept: Callable[[str, Callable[[], list[int]]], list[int]] | None = None) -> None:
        self.inventory = inventory
        self._load_entries = entries
        self._read = read  # test file texts at the to-ref, for ambiguous names
        # kept(name, compute): compute() kept per to-ref commit and name (the qualified-name search
        # reads hundreds of test files); what is kept is positions in the naming index's list
        self._kept = kept or (lambda name, compute: compute())
        self._lines: dict[str, _Lines] = {}
        self._qualified: dict[str, list[tuple[str, object]]] = {}  # ambiguous name -> tests naming it qualified
        self._by_name: dict[str, list[OpEntry]] | None = None
        self._naming: dict[str, list[tuple[str, object]]] | None = None

    def entries_for(self, name: str) -> list[OpEntry]:
        if self._by_name is None:
            self._by_name = {}
            for entry in self._load_entries():
                for key in {entry.name, *entry.aliases}:
                    self._by_name.setdefault(key, []).append(entry)
        return self._by_name.get(name, [])

    def tests_naming(self, name: str) -> list[tuple[str, object]]:
        """Tests (not over OpInfos) whose code reads ``name`` (the last part of a dotted op name)."""
        if self._naming is None:
            self._naming = _naming_index(self.inventory)
        short = name.rsplit(".", 1)[-1]
        found = self._naming.get(short, [])
        if short not in AMBIGUOUS or not found:
            return found
        if self._read is None:
            return []
        if short not in self._qualified:  # a release's YAML diff asks for `select` or `max` several times
            self._qualified[short] = [found[i] for i in self._kept(short, lambda: self._qualified_positions(short))]
        return self._qualified[short]

    def _qualified_positions(self, short: str) -> list[int]:
        """Positions in ``tests_naming``'s list of the tests whose own lines name ``short`` qualified
        (``torch.copy``, ``F.max``): a bare ``copy`` or ``max`` is most often something else."""
        found = self._naming[short]
        missing = sorted({path for path, _ in found} - self._lines.keys())
        self._lines.update({p: _Lines(t or "") for p, t in self._read(missing).items()} if missing else {})
        pattern = re.compile(QUALIFIED.format(name=re.escape(short)))
        return [i for i, (path, test) in enumerate(found)
                if self._lines[path].search(pattern, test.lineno, test.end_lineno)]

    def select(self, ops: list[str], book: CandidateBook, evidence: Callable[[str | None], Evidence]) -> int:
        """Select the tests of ``ops``; ``evidence(label)`` builds the reason (label None: a test naming it).
        Returns how many (test, reason) pairs were added."""
        added = 0
        made: dict[str | None, Evidence] = {}  # one reason per label, shared by every test it selects

        def reason(label: str | None) -> Evidence:
            if label not in made:
                made[label] = evidence(label)
            return made[label]
        names = sorted({n for op in ops for n in related_names(op)})
        labels: dict[str, OpEntry] = {}
        for name in names:
            for entry in self.entries_for(name):
                labels.setdefault(entry.label, entry)
        explicit = set(names) - {e.name for e in labels.values()}  # no entry: only lists naming it
        blind = not self._by_name  # no OpInfo file in the tree: op_db ("*") may hold any op
        # what an op list covers is asked once per distinct list, not once per test
        for ops, tests in self.inventory.op_test_groups().items():
            covered = [label for label, entry in sorted(labels.items())
                       if test_covers_op(list(ops), entry.name, entry.info_class)]
            covered += sorted(explicit & (set(ops) | ({n for n in names if "." not in n} if blind
                                                      and "*" in ops else set())))
            for label in covered:
                book.add_many(tests, "source", reason(label), op=label)
            added += len(covered) * len(tests)
        seen: set[str] = set()
        for name in names:
            if name.startswith("_refs."):
                continue
            short = name.rsplit(".", 1)[-1]
            naming = reason(None).model_copy(update={"detail": f"{reason(None).detail}; the test names {short}"})
            for path, test in self.tests_naming(name):
                test_id = test.test_id(path)
                if test_id not in seen:
                    seen.add(test_id)
                    book.add(path, test, "source", naming)
                    added += 1
        return added


def _naming_index(inventory: Inventory) -> dict[str, list[tuple[str, object]]]:
    """name -> the tests (not over OpInfos) reading it, themselves or through their file's helpers
    (``_check_softmax``), in path order. What a helper reaches is worked out once per class, not per test."""
    naming: dict[str, list[tuple[str, object]]] = {}
    for path, file_inv in sorted(inventory.files.items()):
        for cls, tests in [(c, c.tests) for c in file_inv.classes] + [(None, file_inv.functions)]:
            reach = None
            for test in tests:
                if test.ops is not None:
                    continue
                reach = reach or HelperReach(file_inv, cls)
                for read in reach.names(test):
                    naming.setdefault(read, []).append((path, test))
    return naming


class _Lines:
    """A file's lines (as ``str.splitlines`` counts them) joined by newlines, to search a line range
    in one call: no pattern here matches across a line break."""

    def __init__(self, text: str) -> None:
        lines = text.splitlines()
        self.text = "\n".join(lines)
        self.lengths = list(itertools.accumulate(map(len, lines)))  # line k ends at lengths[k] + k

    def search(self, pattern: re.Pattern, first: int, last: int) -> bool:
        """Whether ``pattern`` matches within lines ``first``..``last`` (1-based, inclusive)."""
        last = min(last, len(self.lengths))
        if first > last:
            return False
        start = self.lengths[first - 2] + first - 1 if first > 1 else 0
        return pattern.search(self.text, start, self.lengths[last - 1] + last - 1) is not None
