"""What stage 1 returns: changed files with their kind, candidates with reasons, removed tests."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field

from selector.hunks import Hunk
from selector.inventory.model import Inventory
from selector.model import Candidate, Evidence


@dataclass
class FileChange:
    path: str
    status: str  # added, deleted, modified, renamed, copied, type_changed
    kind: str  # see selector.changes.classify.KINDS
    old_path: str | None = None
    symlink: bool = False
    binary: bool = False
    details: list[str] = field(default_factory=list)  # e.g. "OpInfo entry mul modified", "ops: addcmul"
    error: str | None = None  # a syntax or YAML error at one ref (reported, analysis falls back)
    # only comments, docstrings or formatting changed (judged for the Python sources outside the
    # test tree that relevance rules or the agent read): no rule fires on it, the agent ignores its hunks
    no_op: bool = False

    @property
    def before_path(self) -> str:
        return self.old_path or self.path


@dataclass
class RemovedTest:
    test_id: str
    reason: str
    evidence: Evidence
    op: str | None = None  # set when one OpInfo entry's variants disappeared, not the whole test


@dataclass
class IgnoredTest:
    """A test whose text changed without changing its normalised AST (formatting, comments, docstrings)."""

    test_id: str
    reason: str
    hunk: str | None = None


@dataclass
class ChangeReport:
    from_ref: str
    to_ref: str
    from_sha: str
    to_sha: str
    files: list[FileChange] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    removed: list[RemovedTest] = field(default_factory=list)
    ignored: list[IgnoredTest] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    inventory_to: Inventory | None = None
    # every changed Python/YAML file's diff hunks by path, when the source diffs in bulk (git): the
    # one diff of the selection, which later stages read too (not part of the JSON report)
    hunks: dict[str, list[Hunk]] = field(default_factory=dict)

    def candidate(self, test_id: str) -> Candidate | None:
        return next((c for c in self.candidates if c.test_id == test_id), None)

    def counts(self) -> dict[str, dict[str, int]]:
        return {"files": dict(sorted(Counter(f.kind for f in self.files).items())),
                "candidates": dict(sorted(Counter(c.change for c in self.candidates).items())),
                "removed": {"tests": sum(1 for r in self.removed if r.op is None),
                            "op_variants": sum(1 for r in self.removed if r.op is not None)},
                "ignored": {"tests": len(self.ignored)}}

    def to_json(self, *, with_inventory: bool = False) -> dict:
        data = {"from_ref": self.from_ref, "to_ref": self.to_ref, "from_sha": self.from_sha, "to_sha": self.to_sha,
                "counts": self.counts(),
                "files": [asdict(f) for f in self.files],
                "candidates": [c.model_dump(exclude_none=True) for c in self.candidates],
                "removed": [{**asdict(r), "evidence": r.evidence.model_dump(exclude_none=True)} for r in self.removed],
                "ignored": [asdict(i) for i in self.ignored],
                "errors": list(self.errors)}
        if with_inventory and self.inventory_to is not None:
            data["inventory_to"] = self.inventory_to.to_json()
        return data
