"""A run's totals as the dashboard shows them, computed in SQL with one grouped query each.

The pipeline computes them once when a run finishes and keeps them in ``runs.summary["totals"]``
(a finished run's results and decisions no longer change), so a reader's first visit to a run of
tens of thousands of results costs one row; a run still in progress is computed on every visit.
"""
from __future__ import annotations

import json
from collections import Counter
from typing import Any

from sqlalchemy import Text, case, cast, func, select
from sqlalchemy.orm import Session

from relay.storage import Explanation, TestResult

# Top-level numeric fields of a result's simulated device stats (backend/spyre_device/sim/stats.py)
# summed per run; other fields are shown per test only.
SIM_TOTALS = ("sim_seconds", "op_count", "native_ops", "fallback_ops", "adapted_ops", "unsupported_ops")


def result_totals(session: Session, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """For each run: outcome counts, flaky and new-failure totals, outcome counts per file, device totals."""
    out = {run_id: {"counts": {}, "flaky": 0, "new_failures": 0, "files": {},
                    "sim": {name: 0 for name in SIM_TOTALS}} for run_id in run_ids}
    if not run_ids:
        return out
    sims = [func.sum(TestResult.sim_stats[name].as_float()) for name in SIM_TOTALS]
    rows = session.execute(
        select(TestResult.run_id, TestResult.file, TestResult.outcome, func.count(),
               func.sum(case((TestResult.flaky.is_(True), 1), else_=0)),
               func.sum(case((TestResult.verdict == "new_failure", 1), else_=0)), *sims)
        .where(TestResult.run_id.in_(run_ids))
        .group_by(TestResult.run_id, TestResult.file, TestResult.outcome))
    for run_id, file, outcome, n, flaky, new, *sim_sums in rows:
        totals = out[run_id]
        totals["counts"][outcome] = totals["counts"].get(outcome, 0) + n
        totals["files"].setdefault(file, {})[outcome] = n
        totals["flaky"] += int(flaky or 0)
        totals["new_failures"] += int(new or 0)
        for name, value in zip(SIM_TOTALS, sim_sums):
            totals["sim"][name] += value or 0
    for totals in out.values():
        totals["sim"] = {k: (round(v, 6) if k == "sim_seconds" else int(v)) for k, v in totals["sim"].items()}
    return out


def explanation_totals(session: Session, run_id: str) -> dict[str, Any]:
    """Decisions per stage and selected (``[[stage, selected, count], ...]``), and the upstream files
    named as evidence for selected tests with the tests and hunks behind each.

    Many tests share one evidence list (a hunk selects a whole OpInfo family), so grouping by the
    evidence text keeps this to a few rows even for large runs."""
    evidence_text = cast(Explanation.evidence, Text)
    rows = session.execute(select(Explanation.stage, Explanation.selected, evidence_text, func.count())
                           .where(Explanation.run_id == run_id)
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
    return {"decisions": [[stage, selected, n] for (stage, selected), n in sorted(decisions.items())],
            "changed_files": [{"file": name, "tests": n, "hunks": sorted(hunks.get(name, ()))}
                              for name, n in tests_per_file.most_common()]}


def run_totals(session: Session, run_id: str) -> dict[str, Any]:
    """What ``runs.summary["totals"]`` keeps for a finished run."""
    return {"results": result_totals(session, [run_id])[run_id], "explanations": explanation_totals(session, run_id)}


def _evidence_items(text: str | None) -> list[dict[str, Any]]:
    try:
        evidence = json.loads(text) if text else []
    except ValueError:
        return []
    return [item for item in evidence if isinstance(item, dict) and item.get("file")] \
        if isinstance(evidence, list) else []
