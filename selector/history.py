"""What earlier runs on spyre tell the selector: per-test durations and failures.

History is read from ``results.jsonl`` files of earlier runs (one JSON record per executed
test: ``id``, ``outcome``, ``duration``) or from a plain mapping. It is keyed by both the
instantiated id and its normalised form, so a rule or a stage-1 candidate (normalised)
and a collected variant (instantiated) both find their record.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from selector.errors import SelectorError
from testdefs.ids import normalise

FAILING_OUTCOMES = frozenset({"failed", "error", "crashed", "timed_out", "xpassed"})
DEFAULT_SECONDS = 1.0  # estimate for a test no run has timed yet


@dataclass
class TestHistory:
    __test__ = False  # not a pytest class

    runs: int = 0
    failures: int = 0
    total_seconds: float = 0.0
    last_outcome: str | None = None

    @property
    def mean_seconds(self) -> float | None:
        return self.total_seconds / self.runs if self.runs else None

    @property
    def failure_rate(self) -> float:
        return self.failures / self.runs if self.runs else 0.0


@dataclass
class History:
    """Durations and failures by instantiated id and by normalised id."""

    by_id: dict[str, TestHistory] = field(default_factory=dict)
    by_base: dict[str, TestHistory] = field(default_factory=dict)

    def record(self, test_id: str, outcome: str, duration: float) -> None:
        for table, key in ((self.by_id, test_id), (self.by_base, normalise(test_id))):
            entry = table.setdefault(key, TestHistory())
            entry.runs += 1
            entry.total_seconds += float(duration or 0.0)
            entry.failures += outcome in FAILING_OUTCOMES
            entry.last_outcome = outcome

    def lookup(self, test_id: str) -> TestHistory | None:
        # without records nothing is normalised (stage 4 asks once per variant: 58,831 on a release)
        return self.by_id.get(test_id) or (self.by_base.get(normalise(test_id)) if self.by_base else None)

    def estimate_seconds(self, test_id: str, default: float = DEFAULT_SECONDS) -> tuple[float, bool]:
        """(seconds, measured?) for one test; the default when no run has timed it."""
        exact = self.by_id.get(test_id)
        if exact and exact.runs:
            return exact.total_seconds / exact.runs, True
        return default, False

    def previously_failed(self) -> list[str]:
        """Normalised ids whose last recorded outcome on spyre was a failure."""
        return sorted(key for key, entry in self.by_base.items() if entry.last_outcome in FAILING_OUTCOMES)

    def failure_rate(self, test_id: str) -> float:
        entry = self.lookup(test_id)
        return entry.failure_rate if entry else 0.0

    def link(self, renames: dict[str, str]) -> None:
        """Tests moved or renamed (normalised new id -> old id) inherit their old ids' records."""
        from selector.renames import translate

        olds = {old: new for new, old in renames.items()}
        for key, entry in list(self.by_id.items()):
            old = normalise(key)
            if old in olds:  # an instantiated variant of the old id: the same variant of the new one
                self.by_id.setdefault(translate(key, old, olds[old]), entry)
        for new, old in renames.items():
            if old in self.by_base:
                self.by_base.setdefault(new, self.by_base[old])

    @classmethod
    def from_records(cls, records: Iterable[dict]) -> "History":
        history = cls()
        for record in records:
            test_id = record.get("id") or record.get("test_id")
            if test_id:
                history.record(test_id, str(record.get("outcome", "passed")), record.get("duration") or 0.0)
        return history

    @classmethod
    def load(cls, paths: Iterable[str | Path]) -> "History":
        """Read results.jsonl files, or run directories containing one."""
        records: list[dict] = []
        for raw in paths:
            path = Path(raw)
            if path.is_dir():
                path = path / "results.jsonl"
            if not path.is_file():
                raise SelectorError(f"history {path} does not exist", hint="pass a results.jsonl file or a run directory")
            for number, line in enumerate(path.read_text().splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise SelectorError(f"{path}:{number}: not a JSON record: {exc.msg}") from None
        return cls.from_records(records)
