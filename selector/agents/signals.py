"""Offline, deterministic relevance signals shared by the local and embedding agents."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from selector.agents.base import TriageTask
from selector.agents.bm25 import BM25
from selector.changes.classify import classify
from selector.hunks import Hunk
from selector.model import Evidence

WEIGHTS = {"must_run": 0.45, "symbols": 0.25, "similarity": 0.2, "history": 0.1}


@dataclass
class Signals:
    must_run: bool = False
    symbols: list[str] = field(default_factory=list)
    similarity: float = 0.0  # best hunk similarity in [0, 1]
    best_hunk: Hunk | None = None
    failure_rate: float = 0.0

    def score(self) -> float:
        value = (WEIGHTS["must_run"] * self.must_run + WEIGHTS["symbols"] * bool(self.symbols)
                 + WEIGHTS["similarity"] * self.similarity + WEIGHTS["history"] * self.failure_rate)
        return round(min(1.0, value), 4)

    def rationale(self, method: str) -> str:
        parts = []
        if self.must_run:
            parts.append("must run (edited, OpInfo, history or always-run)")
        if self.symbols:
            parts.append("references changed " + ", ".join(self.symbols[:5]))
        if self.best_hunk is not None and self.similarity > 0:
            parts.append(f"{method} {self.similarity:.2f} with {self.best_hunk.file} {self.best_hunk.header}")
        if self.failure_rate:
            parts.append(f"failed in {self.failure_rate:.0%} of recorded spyre runs")
        return "; ".join(parts) or "no signal links it to the change"

    def evidence(self) -> list[Evidence]:
        if self.best_hunk is None:
            return []
        return [Evidence(file=self.best_hunk.file, hunk=self.best_hunk.header, line=self.best_hunk.new_start,
                         detail=f"similarity {self.similarity:.2f}")]


def changed_symbols(hunks: list[Hunk]) -> set[str]:
    symbols: set[str] = set()
    for hunk in hunks:
        symbols |= hunk.symbols()
    return {s for s in symbols if not s.startswith("test")}


def outside_tests(hunks: list[Hunk]) -> list[Hunk]:
    """Hunks stage 1 cannot trace to tests precisely (source, OpInfo, YAML): where additions come from.

    Test files and test helpers are diffed by AST in stage 1, which already ignores
    formatting-only edits; re-adding their users by name would undo that.
    """
    return [h for h in hunks if classify(h.file) not in ("test_file", "test_helper")]


def specific_symbols(symbols: set[str], task: TriageTask, max_share: float = 0.05) -> set[str]:
    """Changed symbols that few tests reference: a hit on ``assertEqual`` says nothing."""
    everyone = list(task.tests.values()) + list(task.pool.values())
    limit = max(20, int(max_share * len(everyone)))
    counts = {s: 0 for s in symbols}
    for test in everyone:
        for name in test.references & symbols:
            counts[name] += 1
    return {s for s, n in counts.items() if 0 < n <= limit}


def bm25_similarity(task: TriageTask, ids: list[str]) -> dict[str, tuple[float, Hunk | None]]:
    """Best BM25 match of each test against any hunk, each hunk's scores scaled to its best test.

    Scaled scores keep 4 decimals; the first hunk to reach a test's best score is its hunk."""
    index = BM25({i: (task.tests.get(i) or task.pool[i]).source for i in ids})
    best_value = np.zeros(index.count)
    best_hunk: list[Hunk | None] = [None] * index.count
    for hunk in task.hunks:
        scores = index.score_vector(hunk.context + "\n" + hunk.text)
        top = scores.max(initial=0.0)
        if top <= 0:
            continue
        scaled = scores / top
        # round only where it can matter: Python's round is the reference, numpy's may differ in the last digit
        for position in np.flatnonzero(scaled >= best_value + 0.00004):
            value = round(float(scaled[position]), 4)
            if value > best_value[position]:
                best_value[position], best_hunk[position] = value, hunk
    return {doc_id: (float(best_value[n]), best_hunk[n]) for n, doc_id in enumerate(index.ids)}


def gather(task: TriageTask, similarity) -> tuple[dict[str, Signals], dict[str, Signals]]:
    """Signals for the live tests and for pool tests worth adding (they reference a changed symbol)."""
    changed_ops = changed_symbols(task.hunks)  # once: a release has thousands of hunks
    symbols = specific_symbols(changed_ops, task)
    reach = specific_symbols(changed_symbols(outside_tests(task.hunks)), task)
    additions = sorted(i for i, t in task.pool.items() if i not in task.tests and t.references & reach)
    scored_ids = sorted(task.tests) + additions
    best = similarity(task, scored_ids)
    live: dict[str, Signals] = {}
    for test_id in sorted(set(task.tests) | set(task.unknown)):
        source = task.tests.get(test_id)
        refs = (source.references if source else set()) & symbols
        refs |= set(task.ops.get(test_id, [])) & changed_ops
        value, hunk = best.get(test_id, (0.0, None))
        live[test_id] = Signals(must_run=test_id in task.must_run, symbols=sorted(refs), similarity=value,
                                best_hunk=hunk, failure_rate=round(task.history.failure_rate(test_id), 4))
    added: dict[str, Signals] = {}
    for test_id in additions:
        value, hunk = best.get(test_id, (0.0, None))
        added[test_id] = Signals(symbols=sorted(task.pool[test_id].references & reach), similarity=value,
                                 best_hunk=hunk, failure_rate=round(task.history.failure_rate(test_id), 4))
    return live, added
