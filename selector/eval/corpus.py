"""Score the selector on a regression-injection corpus, per change and per kind of change.

For each injected change: did the selection include at least one newly failing test (the
change is caught), which share of the newly failing tests it included, how many tests it
selected beyond the always-run rules, the share of those that newly fail (precision), and
APFDc of its order. A no-op change should select nothing beyond the always-run rules.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from selector.eval.metrics import apfdc
from selector.eval.truth import Transition
from selector.model import Selection
from testdefs.ids import strip_class_suffix

ALWAYS_RUN = "always-run"


@dataclass
class CaseScore:
    name: str
    kind: str
    breaking: bool
    newly_failing: int
    caught_tests: int
    selected: int  # beyond the always-run rules
    selected_failing: int  # selected tests (beyond always-run) that newly fail
    apfdc: float | None
    missed: list[str]

    @property
    def broke(self) -> bool:
        return self.newly_failing > 0

    @property
    def caught(self) -> bool:
        return self.caught_tests > 0

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "breaking": self.breaking, "newly_failing": self.newly_failing,
                "caught_tests": self.caught_tests, "selected": self.selected, "selected_failing": self.selected_failing,
                "apfdc": None if self.apfdc is None else round(self.apfdc, 4), "missed": self.missed}


def always_run(selection: Selection) -> set[str]:
    """Selected ids an always-run rule selects (whatever else also points at them)."""
    out = set()
    for decision in selection.decisions:
        if decision.selected and any(ALWAYS_RUN in (e.detail or "") for e in decision.evidence):
            out.add(decision.test_id)
    return out


def _same_test(test_id: str) -> str:
    """The id without the device class suffix (PRIVATEUSE1 or SPYRE, by collection order)."""
    parts = test_id.split("::")
    if len(parts) == 3:
        parts[1] = strip_class_suffix(parts[1])
    return "::".join(parts)


def score_case(name: str, kind: str, breaking: bool, newly_failing: list[str], selection: Selection,
               reached: list[str], seconds: dict[str, float] | None = None) -> CaseScore:
    """``reached``: every test of the files the change can reach, as run at the changed ref.

    APFDc is that of the run of all of them with the selection first, in its order (the rest
    after it, so the run costs the same whatever is selected); a newly failing test the selection
    leaves out counts as never detected (0), as in metrics.apfdc."""
    faults = [Transition(test=t, kind="regression", cause=name) for t in newly_failing]
    beyond = [t for t in selection.tests if t not in always_run(selection)]
    found = [f for f in faults if any(f.matches(t) for t in selection.tests)]
    failing_selected = [t for t in beyond if any(f.matches(t) for f in faults)]
    chosen = {_same_test(t) for t in selection.tests}
    rest = [t for t in reached if _same_test(t) not in chosen and not any(f.matches(t) for f in faults)]
    return CaseScore(name=name, kind=kind, breaking=breaking, newly_failing=len(faults), caught_tests=len(found),
                     selected=len(beyond), selected_failing=len(failing_selected),
                     apfdc=apfdc(selection.tests + rest, seconds or {}, faults) if faults else None,
                     missed=sorted(f.test for f in faults if f not in found))


def _ratio(part: float, whole: float) -> float | None:
    return round(part / whole, 4) if whole else None


def by_kind(scores: list[CaseScore]) -> list[dict]:
    """One row per kind: changes caught, tests caught, selected, precision, mean APFDc."""
    groups: dict[str, list[CaseScore]] = defaultdict(list)
    for score in scores:
        groups[score.kind].append(score)
    rows = []
    for kind in sorted(groups, key=lambda k: (not groups[k][0].breaking, k)):
        cases = groups[kind]
        broke = [c for c in cases if c.broke]
        failing, caught = sum(c.newly_failing for c in broke), sum(c.caught_tests for c in broke)
        selected = sum(c.selected for c in cases)
        values = [c.apfdc for c in broke if c.apfdc is not None]
        rows.append({
            "kind": kind, "breaking": cases[0].breaking, "changes": len(cases), "changes_that_broke": len(broke),
            "changes_caught": sum(c.caught for c in broke), "change_recall": _ratio(sum(c.caught for c in broke), len(broke)),
            "newly_failing": failing, "tests_caught": caught, "test_recall": _ratio(caught, failing),
            "selected": selected, "precision": _ratio(sum(c.selected_failing for c in cases), selected),
            "apfdc": round(sum(values) / len(values), 4) if values else None,
            "apfdc_min": round(min(values), 4) if values else None,
        })
    return rows
