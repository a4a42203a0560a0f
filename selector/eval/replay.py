"""Replay one upstream change: run the selector, collect the full suite, compare with the truth."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from selector.agents.sources import test_files
from selector.eval import baselines
from selector.eval.metrics import apfdc, cause_recall, recall
from selector.eval.truth import GroundTruth
from selector.history import History
from selector.model import Selection
from selector.select import load_history, load_rules, open_source, select
from selector.stages.collect import collect


@dataclass
class Row:
    """One strategy's numbers."""

    name: str
    tests: int
    seconds: float
    recall: float | None
    fixed_recall: float | None = None
    cause_recall: float | None = None
    apfdc: float | None = None
    note: str = ""


@dataclass
class EvalReport:
    from_ref: str
    to_ref: str
    truth_source: str
    regressions: int
    fixed: int
    full_tests: int
    full_seconds: float
    selector_seconds: float
    rows: list[Row] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)  # regressions the selector did not select, with why
    funnel: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict:
        saved = self.full_seconds - self.rows[0].seconds if self.rows else 0.0
        return {
            "from_ref": self.from_ref, "to_ref": self.to_ref, "truth": self.truth_source,
            "regressions": self.regressions, "fixed": self.fixed,
            "full_suite": {"tests": self.full_tests, "seconds": round(self.full_seconds, 3)},
            "selector_seconds": round(self.selector_seconds, 3),
            "selector_overhead_of_saved_time": round(self.selector_seconds / saved, 4) if saved > 0 else None,
            "funnel": self.funnel, "missed": self.missed,
            "strategies": [
                {"name": r.name, "tests": r.tests, "seconds": round(r.seconds, 3),
                 "fraction_by_count": _ratio(r.tests, self.full_tests),
                 "fraction_by_duration": _ratio(r.seconds, self.full_seconds),
                 "test_recall": _round(r.recall), "fixed_recall": _round(r.fixed_recall),
                 "cause_recall": _round(r.cause_recall), "apfdc": _round(r.apfdc), "note": r.note}
                for r in self.rows],
        }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def _why_missed(selection: Selection, transition) -> str:
    for decision in selection.decisions:
        if not decision.selected and transition.matches(decision.test_id):
            return f"{transition.test}: dropped at {decision.stage}: {decision.reason}"
    return f"{transition.test}: never a candidate"


def evaluate(source: Any, from_ref: str, to_ref: str, truth: GroundTruth, *, rules: Any = None,
             history: Any = None, agent: str = "local", budget: str | None = None, time_budget: str | None = None,
             cache_dir: str | Path | None = None, progress=None) -> tuple[EvalReport, Selection]:
    source = open_source(source, cache_dir)
    rule_set, rule_paths = load_rules(rules)
    past: History = load_history(history)
    started = time.perf_counter()
    selection = select(source, from_ref, to_ref, rules=rule_set, agent=agent, budget=budget,
                       time_budget=time_budget, history=past, progress=progress, cache_dir=cache_dir)
    selector_seconds = time.perf_counter() - started
    if progress:
        progress("eval", "collecting the full suite on spyre", None, None)
    to_sha = selection.to_sha or source.resolve(to_ref)
    checkout = Path(source.checkout(to_sha))
    universe = collect(checkout, test_files(checkout), rule_paths).ids
    seconds = {t: past.estimate_seconds(t)[0] for t in universe}
    changed = [c.path for c in source.changed_files(selection.from_sha or source.resolve(from_ref), to_sha)]
    regressions, fixed = truth.of_kind("regression"), truth.of_kind("fixed")

    def row(name: str, tests: list[str], note: str = "", ordered: bool = False) -> Row:
        return Row(name=name, tests=len(tests), seconds=sum(seconds.get(t, 1.0) for t in tests),
                   recall=recall(tests, regressions), fixed_recall=recall(tests, fixed),
                   cause_recall=cause_recall(tests, regressions),
                   apfdc=apfdc(tests, seconds, regressions) if ordered else None, note=note)

    report = EvalReport(from_ref=from_ref, to_ref=to_ref, truth_source=truth.source, regressions=len(regressions),
                        fixed=len(fixed), full_tests=len(universe), full_seconds=sum(seconds.values()),
                        selector_seconds=selector_seconds, funnel=dict(selection.funnel))
    report.rows.append(row(f"selector ({agent})", selection.tests, "riskiest first", ordered=True))
    report.rows.append(row("all tests", universe, "the full suite"))
    report.rows.append(row("changed test files", baselines.changed_files(universe, changed), "every test in an edited file"))
    report.rows.append(row("TD-style top 25% of files", baselines.td_files(universe, changed, past),
                           "EditedByPR, PreviouslyFailed, Filepath"))
    count = len(selection.tests)
    report.rows.append(Row(name="random, same count", tests=count,
                           seconds=count * (report.full_seconds / max(1, len(universe))),
                           recall=baselines.random_same_count(universe, count, regressions),
                           fixed_recall=baselines.random_same_count(universe, count, fixed),
                           cause_recall=baselines.random_same_count(universe, count, regressions, metric=cause_recall),
                           note="mean of 50 seeded samples"))
    report.missed = [_why_missed(selection, t) for t in regressions if not any(t.matches(x) for x in selection.tests)]
    return report, selection
