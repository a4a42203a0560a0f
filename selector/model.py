"""What flows between the selector's stages.

Stage 1 (diff) produces ``Candidate``s at the level of upstream test functions
(``file::Class::test`` before device instantiation). Stages 2-4 turn them into
``Decision``s; stage 4 resolves them to real instantiated ids. Every test considered
ends with exactly one final Decision saying why it was selected or dropped.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

StageName = Literal["diff", "rules", "agent", "verify"]


class Evidence(BaseModel):
    """Where a reason comes from: a changed file and hunk, a rule, an OpInfo entry."""

    file: str | None = None
    hunk: str | None = None  # e.g. "@@ -10,4 +10,6 @@"
    line: int | None = None
    rule: str | None = None  # e.g. "testdefs/rules/demo/test_ops.yaml:14"
    op: str | None = None  # OpInfo name (with variant) when the reason is an OpInfo change
    detail: str | None = None

    def key(self) -> tuple:
        """Identity for de-duplication in a set (pydantic equality in a list is quadratic)."""
        return (self.file, self.hunk, self.line, self.rule, self.op, self.detail)


class Candidate(BaseModel):
    """An upstream test function a change may affect (stage 1 output)."""

    test_id: str  # "test/test_foo.py::TestFoo::test_bar" (un-instantiated, normalised form)
    file: str
    class_name: str | None = None
    name: str
    change: Literal["added", "modified", "renamed", "moved", "helper", "opinfo", "source", "always", "history"]
    ops: list[str] = Field(default_factory=list)  # OpInfo names the test is parametrized over
    reasons: list[Evidence] = Field(default_factory=list)
    previous_id: str | None = None  # moved or renamed: its id at the from-ref (rules and history follow it)


class Decision(BaseModel):
    """The verdict on one test at one stage; the last one for a test is final."""

    test_id: str  # instantiated id after verify, normalised before
    selected: bool
    stage: StageName
    reason: str  # one human sentence
    rule: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    score: float | None = None  # agent risk score, higher runs earlier
    estimated_seconds: float | None = None
    shard: int | None = None


class Selection(BaseModel):
    """The result of ``selector.select``: what to run, in order, and why everything else was dropped."""

    from_ref: str
    to_ref: str
    from_sha: str | None = None
    to_sha: str | None = None
    tests: list[str] = Field(default_factory=list)  # instantiated ids in execution order
    shards: list[list[str]] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)  # final decision per test considered
    funnel: dict[str, int] = Field(default_factory=dict)  # counts per stage, in stage order
