"""The relevance section: which upstream source changes make which tests or ops worth running.

The selector asks ``targets_for(changed_path)`` for each changed upstream file and always adds
``always_run``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from testdefs.matching import source_matches
from testdefs.schema import RelevanceRule


@dataclass(frozen=True)
class RelevanceHit:
    tests: tuple[str, ...]  # test files or test id patterns
    ops: tuple[str, ...]  # OpInfo names
    rule: str  # 'file:line' of the relevance rule
    source: str  # the source glob that matched


@dataclass
class RelevanceIndex:
    rules: list[tuple[RelevanceRule, str]] = field(default_factory=list)  # (rule, 'file:line')
    always_run_refs: list[tuple[str, str]] = field(default_factory=list)  # (pattern, 'file:line')

    @property
    def always_run(self) -> list[str]:
        return [pattern for pattern, _ in self.always_run_refs]

    def targets_for(self, changed_path: str) -> list[RelevanceHit]:
        hits = []
        for rule, ref in self.rules:
            glob = next((g for g in rule.sources if source_matches(g, changed_path)), None)
            if glob is not None:
                hits.append(RelevanceHit(tuple(rule.tests), tuple(rule.ops), ref, glob))
        return hits
