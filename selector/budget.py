"""Budgets: how much of the selection may run, by share of count/duration or by wall time."""
from __future__ import annotations

import re
from dataclasses import dataclass

from selector.errors import SelectorError

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
_TIME = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*$")


@dataclass(frozen=True)
class Budget:
    """At most ``fraction`` of the candidates' count and duration, and/or ``seconds`` of test time."""

    fraction: float | None = None
    seconds: float | None = None

    def describe(self) -> str:
        parts = []
        if self.fraction is not None:
            parts.append(f"{self.fraction * 100:g}% of the candidates")
        if self.seconds is not None:
            parts.append(f"{self.seconds:g}s of test time")
        return " and ".join(parts) or "no budget"


def parse_percent(text: str) -> float:
    found = _PERCENT.match(str(text))
    if not found or not 0 < float(found[1]) <= 100:
        raise SelectorError(f"budget '{text}' is not a percentage", hint="expected e.g. --budget 25% (between 0 and 100)")
    return float(found[1]) / 100


def parse_duration(text: str) -> float:
    """``20m``, ``1h30m``, ``90s`` or a bare number of seconds."""
    text = str(text).strip()
    if re.fullmatch(r"\d+(?:\.\d+)?", text):
        seconds = float(text)
    else:
        found = _TIME.match(text)
        if not text or not found or not any(found.groups()):
            raise SelectorError(f"time budget '{text}' is not a duration", hint="expected e.g. --time 20m, 1h30m or 90s")
        hours, minutes, secs = (float(g) if g else 0.0 for g in found.groups())
        seconds = hours * 3600 + minutes * 60 + secs
    if seconds <= 0:
        raise SelectorError(f"time budget '{text}' must be positive", hint="expected e.g. --time 20m")
    return seconds


def make_budget(budget: str | float | None, time_budget: str | float | None) -> Budget | None:
    if budget is None and time_budget is None:
        return None
    fraction = None
    if budget is not None:
        fraction = float(budget) if isinstance(budget, (int, float)) else parse_percent(budget)
        if not 0 < fraction <= 1:
            raise SelectorError(f"budget {budget} is outside (0, 1]", hint="pass a fraction or a percentage such as 25%")
    seconds = None
    if time_budget is not None:
        seconds = float(time_budget) if isinstance(time_budget, (int, float)) else parse_duration(time_budget)
    return Budget(fraction=fraction, seconds=seconds)


def cut(ordered: list[tuple[str, float]], budget: Budget, must_keep: set[str]) -> tuple[list[str], list[str]]:
    """Keep tests in risk order until the budget is spent; must-keep tests always stay.

    ``ordered`` is (test id, estimated seconds), riskiest first. Returns (kept, cut).
    A fraction budget limits both count and duration, so a few long tests cannot eat it.
    """
    total_count = len(ordered)
    total_seconds = sum(seconds for _, seconds in ordered)
    max_count = total_count if budget.fraction is None else max(1, int(budget.fraction * total_count + 1e-9))
    max_seconds = float("inf")
    if budget.fraction is not None:
        max_seconds = budget.fraction * total_seconds
    if budget.seconds is not None:
        max_seconds = min(max_seconds, budget.seconds)
    kept: list[str] = []
    dropped: list[str] = []
    used_seconds = 0.0
    for test_id, seconds in ordered:
        fits = len(kept) < max_count and used_seconds + seconds <= max_seconds
        if fits or test_id in must_keep or not kept:
            kept.append(test_id)
            used_seconds += seconds
        else:
            dropped.append(test_id)
    return kept, dropped
