"""Collects candidates as stage 1 finds reasons, one Candidate per test with every reason kept."""
from __future__ import annotations

from selector.inventory.model import TestFunction
from selector.model import Candidate, Evidence

# When several reasons select a test, the candidate's ``change`` is the strongest.
PRIORITY = ("added", "renamed", "moved", "modified", "helper", "opinfo", "source", "always", "history")
OP_SCOPED = ("opinfo", "source", "modified")  # "modified" with an op: only that op was added to the test's list
RANK = {change: rank for rank, change in enumerate(PRIORITY)}


class CandidateBook:
    def __init__(self) -> None:
        self._by_id: dict[str, Candidate] = {}
        self._whole: set[str] = set()  # tests affected in every variant, not only some ops
        self._seen: dict[str, set[tuple]] = {}  # per test, the reasons it already has (linear merge)
        self._ops: dict[str, set[str]] = {}  # per test, its ``ops`` as a set (a test can collect hundreds)

    def add(self, path: str, test: TestFunction, change: str, evidence: Evidence, *, op: str | None = None,
            previous_id: str | None = None) -> None:
        self.add_many([(path, test)], change, evidence, op=op, previous_id=previous_id)

    def add_many(self, tests: list[tuple[str, TestFunction]], change: str, evidence: Evidence, *,
                 op: str | None = None, previous_id: str | None = None) -> None:
        """``add`` for every (path, test): one OpInfo entry's evidence reaches hundreds of tests."""
        key = evidence.key()
        whole = op is None or change not in OP_SCOPED
        rank = RANK[change]
        for path, test in tests:
            test_id = test.test_id(path)
            candidate = self._by_id.get(test_id)
            if candidate is None:
                candidate = Candidate(test_id=test_id, file=path, class_name=test.class_name, name=test.name,
                                      change=change)
                self._by_id[test_id] = candidate
            elif rank < RANK[candidate.change]:
                candidate.change = change
            if previous_id is not None:  # a renamed test: its old id keeps the rule and history link
                candidate.previous_id = previous_id
            seen = self._seen.setdefault(test_id, set())
            if key not in seen:
                seen.add(key)
                candidate.reasons.append(evidence)
            if whole:
                self._whole.add(test_id)
            else:
                ops = self._ops.setdefault(test_id, set())
                if op not in ops:
                    ops.add(op)
                    candidate.ops.append(op)

    def get(self, test_id: str) -> Candidate | None:
        """The candidate collected so far for ``test_id`` (read it, do not change it)."""
        return self._by_id.get(test_id)

    def whole(self, test_id: str) -> bool:
        """Whether every variant of the test is affected so far (not only some ops')."""
        return test_id in self._whole

    def __contains__(self, test_id: str) -> bool:
        return test_id in self._by_id

    def candidates(self) -> list[Candidate]:
        """Sorted by id; ``ops`` is empty when every variant is affected, else the affected OpInfo labels."""
        out = []
        for test_id in sorted(self._by_id):
            candidate = self._by_id[test_id]
            candidate.ops = [] if test_id in self._whole else sorted(candidate.ops)
            out.append(candidate)
        return out
