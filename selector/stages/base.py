"""The stage protocol and the state that flows through the stages.

A stage reads and updates one ``SelectContext``. The context holds one current
``Decision`` per test considered: a dropped test's decision is final; a selected test's
decision is replaced by each later stage that looks at it. Stage 4 swaps normalised ids
for the instantiated ids it collects.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol

from selector.agents.sources import ToRefSources
from selector.budget import Budget
from selector.changes.report import ChangeReport
from selector.history import History
from selector.hunks import Hunk
from selector.inventory.model import Inventory
from selector.model import Candidate, Decision, Evidence

# progress(stage, message, done, total): done/total are None for a plain status line
Progress = Callable[[str, str, int | None, int | None], None]

# Candidates whose change came straight from the diff, history or an always-run rule:
# the agent may reorder them but never drop them (unless allow_agent_drop).
MUST_RUN_CHANGES = frozenset({"added", "modified", "renamed", "moved", "helper", "opinfo", "always", "history"})


@dataclass
class SelectContext:
    source: Any  # selector.upstream.UpstreamSource
    from_ref: str
    to_ref: str
    rules: Any = None  # testdefs.RuleSet
    history: History = field(default_factory=History)
    agent: str = "local"
    agent_options: dict[str, Any] = field(default_factory=dict)
    allow_agent_drop: bool = False
    budget: Budget | None = None
    shards: int = 1
    torch_version: str | None = None
    progress: Progress | None = None
    pytest_runner: Any = None  # selector.stages.collect.PytestRunner; None: a new interpreter per collection
    collector: Any = None  # selector.stages.collect.EarlyCollector: stage 4's interpreter, started ahead

    # filled in by the stages
    report: ChangeReport | None = None  # stage 1's analysis: candidates, the diff's hunks, the to-ref inventory
    from_sha: str | None = None
    to_sha: str | None = None
    checkout: Path | None = None  # to-ref working tree, made on first use
    to_sources: ToRefSources | None = None  # the to-ref files' parsed facts, shared by stages 3 and 4
    candidates: dict[str, Candidate] = field(default_factory=dict)  # by normalised id
    decisions: dict[str, Decision] = field(default_factory=dict)
    must_run: set[str] = field(default_factory=set)
    always_run_patterns: list[tuple[str, str]] = field(default_factory=list)  # (pattern, rules file:line)
    funnel: dict[str, int] = field(default_factory=dict)
    tests: list[str] = field(default_factory=list)
    shard_lists: list[list[str]] = field(default_factory=list)
    outside_dtypes: set[str] = field(default_factory=set)  # variants in a dtype the device does not support

    def say(self, stage: str, message: str, done: int | None = None, total: int | None = None) -> None:
        if self.progress:
            self.progress(stage, message, done, total)

    @property
    def inventory(self) -> Inventory | None:
        """The to-ref's test inventory stage 1 scanned (None before stage 1)."""
        return self.report.inventory_to if self.report is not None else None

    def hunks(self) -> list[Hunk]:
        """Every hunk of the selection's one diff, in file order ([] before stage 1), but those of
        files whose edit changes no code (comments, docstrings: stage 1's ``FileChange.no_op``)."""
        if self.report is None:
            return []
        quiet = {f.path for f in self.report.files if f.no_op}
        return [h for path, found in self.report.hunks.items() if path not in quiet for h in found]

    def live(self) -> list[str]:
        """Ids still selected, sorted for determinism."""
        return sorted(test_id for test_id, decision in self.decisions.items() if decision.selected)

    def select(self, test_id: str, stage: str, reason: str, **fields: Any) -> Decision:
        previous = self.decisions.get(test_id)
        if previous is not None:
            fields.setdefault("evidence", previous.evidence)
            fields.setdefault("score", previous.score)
            fields.setdefault("rule", previous.rule)
        decision = Decision(test_id=test_id, selected=True, stage=stage, reason=reason, **fields)
        self.decisions[test_id] = decision
        return decision

    def drop(self, test_id: str, stage: str, reason: str, *, rule: str | None = None,
             evidence: list[Evidence] | None = None, **fields: Any) -> Decision:
        previous = self.decisions.get(test_id)
        kept_evidence = list(previous.evidence) if previous else []
        decision = Decision(test_id=test_id, selected=False, stage=stage, reason=reason, rule=rule,
                            evidence=kept_evidence + list(evidence or []), **fields)
        self.decisions[test_id] = decision
        return decision

    def checkout_to(self) -> Path:
        """The to-ref tree on disk (made once, shared by the agent and verify stages)."""
        if self.checkout is None:
            self.checkout = Path(self.source.checkout(self.to_sha or self.to_ref)).resolve()
        return self.checkout

    def sources(self) -> ToRefSources:
        """The to-ref checkout's test sources and definition spans: each file parsed once for the
        agent's triage and stage 4's variant matching (and kept by blob id for the next selection)."""
        if self.to_sources is None:
            self.to_sources = ToRefSources(self.checkout_to(), self.source, self.to_sha)
        return self.to_sources


class Stage(Protocol):
    name: str

    def run(self, ctx: SelectContext) -> None:
        """Update ``ctx.decisions`` and record this stage's count in ``ctx.funnel``."""
