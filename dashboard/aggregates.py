"""Per-run totals the pages show on every visit, computed in one grouped query each and kept
in memory once a run has finished (its results and explanations no longer change).

A run still in progress is recomputed on every request, so the dashboard follows it live.
"""
from __future__ import annotations

import json
import threading
from collections import Counter, OrderedDict
from typing import Any

from sqlalchemy import Text, case, cast, func, select
from sqlalchemy.orm import Session

from relay.storage import Explanation, Run, TestResult

# Top-level numeric fields of a result's simulated device stats (backend/spyre_device/sim/stats.py)
# summed per run; other fields are shown per test only.
SIM_TOTALS = ("sim_seconds", "op_count", "native_ops", "fallback_ops", "adapted_ops", "unsupported_ops")
FINISHED_STATUSES = frozenset({"passed", "failed", "error", "cancelled", "timed_out"})


class FinishedRunCache:
    """A small thread-safe LRU keyed by database, run, finish time and what was computed."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._items: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple) -> Any:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        return None

    def put(self, key: tuple, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


CACHE = FinishedRunCache()


def _key(session: Session, run: Run, kind: str) -> tuple | None:
    if run.status not in FINISHED_STATUSES or run.finished_at is None:
        return None
    return (str(session.get_bind().url), run.id, run.finished_at.isoformat(), kind)


def result_totals(session: Session, runs: list[Run]) -> dict[str, dict[str, Any]]:
    """For each run: outcome counts, flaky and new-failure totals, and outcome counts per file."""
    out: dict[str, dict[str, Any]] = {}
    missing = []
    for run in runs:
        cached = CACHE.get(_key(session, run, "results") or ())
        if cached is not None:
            out[run.id] = cached
        else:
            out[run.id] = {"counts": {}, "flaky": 0, "new_failures": 0, "files": {},
                           "sim": {name: 0 for name in SIM_TOTALS}}
            missing.append(run)
    if missing:
        sims = [func.sum(TestResult.sim_stats[name].as_float()) for name in SIM_TOTALS]
        rows = session.execute(
            select(TestResult.run_id, TestResult.file, TestResult.outcome, func.count(),
                   func.sum(case((TestResult.flaky.is_(True), 1), else_=0)),
                   func.sum(case((TestResult.verdict == "new_failure", 1), else_=0)), *sims)
            .where(TestResult.run_id.in_([run.id for run in missing]))
            .group_by(TestResult.run_id, TestResult.file, TestResult.outcome))
        for run_id, file, outcome, n, flaky, new, *sim_sums in rows:
            totals = out[run_id]
            totals["counts"][outcome] = totals["counts"].get(outcome, 0) + n
            totals["files"].setdefault(file, {})[outcome] = n
            totals["flaky"] += int(flaky or 0)
            totals["new_failures"] += int(new or 0)
            for name, value in zip(SIM_TOTALS, sim_sums):
                totals["sim"][name] += value or 0
        for run in missing:
            sim = out[run.id]["sim"]
            out[run.id]["sim"] = {k: (round(v, 6) if k == "sim_seconds" else int(v)) for k, v in sim.items()}
        for run in missing:
            key = _key(session, run, "results")
            if key:
                CACHE.put(key, out[run.id])
    return out


def explanation_totals(session: Session, run: Run) -> dict[str, Any]:
    """Decisions per (stage, selected), and the upstream files named as evidence for selected tests.

    Many tests share one evidence list (a hunk selects a whole OpInfo family), so grouping by the
    evidence text keeps this to a few rows even for large runs."""
    key = _key(session, run, "explanations")
    cached = CACHE.get(key) if key else None
    if cached is not None:
        return cached
    evidence_text = cast(Explanation.evidence, Text)
    rows = session.execute(select(Explanation.stage, Explanation.selected, evidence_text, func.count())
                           .where(Explanation.run_id == run.id)
                           .group_by(Explanation.stage, Explanation.selected, evidence_text))
    decisions: Counter[tuple[str, bool]] = Counter()
    tests_per_file: Counter[str] = Counter()
    hunks: dict[str, set[str]] = {}
    for stage, selected, text, n in rows:
        decisions[(stage, bool(selected))] += n
        if selected:
            for item in _evidence_items(text):
                tests_per_file[item["file"]] += n
                if item.get("hunk"):
                    hunks.setdefault(item["file"], set()).add(item["hunk"])
    totals = {"decisions": dict(decisions),
              "changed_files": [{"file": name, "tests": n, "hunks": sorted(hunks.get(name, ()))}
                                for name, n in tests_per_file.most_common()]}
    if key:
        CACHE.put(key, totals)
    return totals


def _evidence_items(text: str | None) -> list[dict[str, Any]]:
    try:
        evidence = json.loads(text) if text else []
    except ValueError:
        return []
    return [item for item in evidence if isinstance(item, dict) and item.get("file")] \
        if isinstance(evidence, list) else []
