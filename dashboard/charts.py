"""Geometry for the server-rendered SVG charts (templates/_charts.html draws them; no JavaScript)."""
from __future__ import annotations

from typing import Any

from relay.execution.outcomes import FAILING, Outcome


def outcome_class(outcome: str | None) -> str:
    """One CSS class per outcome family, shared by chips, rows and chart marks."""
    if outcome in FAILING:
        return "bad"
    if outcome in (Outcome.XFAILED, Outcome.SKIPPED):
        return "muted"
    if outcome == Outcome.XPASSED:
        return "warn"
    return "good" if outcome == Outcome.PASSED else "muted"


def cell_class(counts: dict[str, int]) -> str:
    """A matrix cell: red when anything failed, yellow for unexpected passes, green otherwise
    (skips and expected failures are the steady state, not a warning)."""
    if any(counts.get(o) for o in FAILING):
        return "bad"
    return "warn" if counts.get(Outcome.XPASSED) else "good"


def rate_class(rate: float | None) -> str:
    """The pass-rate chip: green at 95% and above, yellow at 80% and above, red below."""
    if rate is None:
        return "muted"
    return "good" if rate >= 0.95 else "warn" if rate >= 0.80 else "bad"


def funnel_chart(stages: list[dict[str, Any]], width: int = 520, bar_height: int = 26) -> dict[str, Any]:
    """Horizontal bars, one per stage, lengths proportional to the largest count."""
    label_width, gap = 110, 8
    top = max([s["count"] for s in stages] + [1])
    span = width - label_width - 70
    bars = []
    for i, stage in enumerate(stages):
        length = max(2, round(span * stage["count"] / top)) if stage["count"] else 0
        y = i * (bar_height + gap)
        bars.append({"label": stage["stage"], "count": stage["count"], "x": label_width, "y": y,
                     "width": length, "height": bar_height, "text_y": y + bar_height * 0.68})
    return {"width": width, "height": max(1, len(bars) * (bar_height + gap) - gap), "bars": bars,
            "label_width": label_width}


def rate_chart(points: list[dict[str, Any]], width: int = 520, height: int = 120,
               floor: float | None = None, grid: tuple[float, ...] = (1.0, 0.95, 0.8),
               colour=None) -> dict[str, Any]:
    """A share (0..1) per point as a line with one dot each, oldest on the left."""
    pad = 24
    colour = colour or rate_class
    usable = [p for p in points if p.get("rate") is not None]
    if floor is None:  # pass rates: start at 75% (or lower) so the 95% and 80% lines stay readable
        floor = min([0.75] + [int(p["rate"] * 20) / 20 for p in usable])
    step = (width - 2 * pad) / max(1, len(usable) - 1)

    def y_of(rate: float) -> float:
        return round(pad / 2 + (height - pad) * (1 - rate) / (1 - floor), 1)

    marks = []
    for i, point in enumerate(usable):
        x = pad + i * step if len(usable) > 1 else width / 2
        marks.append({**point, "x": round(x, 1), "y": y_of(point["rate"]), "css": colour(point["rate"])})
    return {"width": width, "height": height, "marks": marks,
            "line": " ".join(f"{m['x']},{m['y']}" for m in marks),
            "grid": [{"label": f"{round(r * 100)}%", "y": y_of(r)} for r in sorted({*grid, floor}, reverse=True)]}


def timeline_chart(points: list[dict[str, Any]], cell: int = 16) -> dict[str, Any]:
    """One square per run, coloured by the worst outcome of the test there, ringed when flaky."""
    gap = 3
    cells = [{**p, "x": i * (cell + gap), "size": cell, "css": outcome_class(p["outcome"])}
             for i, p in enumerate(points)]
    return {"width": max(cell, len(cells) * (cell + gap)), "height": cell + 2, "cells": cells}


def flat_stats(stats: dict[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Nested simulator stats as ``a.b.c: value`` rows, leaving out zeros and empty groups
    (most counters are zero for most tests; the ones that moved are what a reader looks for)."""
    rows: list[tuple[str, Any]] = []
    for key in sorted(stats):
        value, name = stats[key], f"{prefix}{key}"
        if isinstance(value, dict):
            rows.extend(flat_stats(value, name + "."))
        elif value not in (0, 0.0, None, "", [], False):
            rows.append((name, value))
    return rows
