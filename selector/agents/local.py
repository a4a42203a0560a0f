"""The default agent: offline and deterministic (AST symbol/op references, BM25, failure history)."""
from __future__ import annotations

from selector.agents.base import TriageTask, Verdict
from selector.agents.signals import bm25_similarity, gather


def verdicts_from(task: TriageTask, similarity, method: str, name: str) -> list[Verdict]:
    live, added = gather(task, similarity)
    out = [Verdict(test_id=i, score=s.score(), rationale=f"{name}: {s.rationale(method)}", evidence=s.evidence())
           for i, s in live.items()]
    out += [Verdict(test_id=i, score=s.score(), added=True, evidence=s.evidence(),
                    rationale=f"{name}: added, stage 1 missed it: {s.rationale(method)}")
            for i, s in added.items()]
    return out


class LocalAgent:
    name = "local"

    def __init__(self, **_options) -> None:
        pass

    def triage(self, task: TriageTask) -> list[Verdict]:
        return verdicts_from(task, bm25_similarity, "BM25", self.name)
