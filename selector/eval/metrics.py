"""The numbers a selection is judged by (test_selection.md section 4)."""
from __future__ import annotations

from selector.eval.truth import Transition


def caught(selected: list[str], transitions: list[Transition]) -> list[Transition]:
    return [t for t in transitions if any(t.matches(test_id) for test_id in selected)]


def recall(selected: list[str], transitions: list[Transition]) -> float | None:
    if not transitions:
        return None
    return len(caught(selected, transitions)) / len(transitions)


def cause_recall(selected: list[str], transitions: list[Transition]) -> float | None:
    """Share of root causes with at least one of their tests selected."""
    causes = {t.cause for t in transitions}
    if not causes:
        return None
    return len({t.cause for t in caught(selected, transitions)}) / len(causes)


def apfdc(order: list[str], seconds: dict[str, float], faults: list[Transition]) -> float | None:
    """Cost-cognizant APFD (Elbaum et al.; test_selection.md section 4): 1 is every fault revealed at once.

    A fault is a root cause (``Transition.cause``), revealed by the first test in ``order`` that
    fails because of it; each failing test is not a fault of its own (else a change failing every
    test of a run scores 0.5 in the best order). Undetected faults count 0."""
    if not faults or not order:
        return None
    costs = [seconds.get(t, 1.0) for t in order]
    total = sum(costs)
    suffix = [0.0] * (len(order) + 1)
    for index in range(len(order) - 1, -1, -1):
        suffix[index] = suffix[index + 1] + costs[index]
    causes: dict[str, list[Transition]] = {}
    for fault in faults:
        causes.setdefault(fault.cause, []).append(fault)
    value = 0.0
    for revealing in causes.values():
        first = next((i for i, t in enumerate(order) if any(f.matches(t) for f in revealing)), None)
        if first is not None:
            value += suffix[first] - costs[first] / 2
    return value / (total * len(causes))
