"""The agent interface: rank the tests a change may affect, add ones stage 1 missed.

An agent gets a ``TriageTask`` (the live tests with their sources, the diff hunks, the
failure history, and a pool of other upstream tests it may add from) and returns one
``Verdict`` per test it has an opinion on. Verdicts carry a score in [0, 1] (higher runs
earlier and survives budgets) and a rationale; the stage enforces the safety rules
(must-run tests are never dropped), so an agent cannot break them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from selector.agents.sources import TestSource
from selector.history import History
from selector.hunks import Hunk
from selector.model import Evidence


@dataclass
class TriageTask:
    tests: dict[str, TestSource]  # live tests by normalised id (source may be missing: see ``unknown``)
    unknown: list[str]  # live ids whose source was not found at the to-ref
    must_run: set[str]
    ops: dict[str, list[str]]  # OpInfo names per live test
    hunks: list[Hunk]
    history: History
    pool: dict[str, TestSource] = field(default_factory=dict)  # other tests the agent may add


@dataclass
class Verdict:
    test_id: str
    score: float
    rationale: str
    select: bool = True
    added: bool = False  # the agent proposes a test stage 1 did not find
    evidence: list[Evidence] = field(default_factory=list)


class Agent(Protocol):
    name: str

    def triage(self, task: TriageTask) -> list[Verdict]:
        ...
