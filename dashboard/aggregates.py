"""Per-run totals the pages show on every visit.

A finished run carries them in ``runs.summary["totals"]``, written by the pipeline when it finished
(``relay.storage.totals``); runs stored before that, or still in progress, are computed with the
same grouped queries. Finished runs' totals are also kept in memory, so a page costs no JSON decode.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from sqlalchemy.orm import Session

from relay.runs.states import FINISHED
from relay.storage import Run
from relay.storage import totals as computed


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
    if run.status not in FINISHED or run.finished_at is None:
        return None
    return (str(session.get_bind().url), run.id, run.finished_at.isoformat(), kind)


def _stored(run: Run, kind: str) -> Any:
    """The totals the pipeline kept for a finished run, if it kept them."""
    if run.status not in FINISHED:
        return None
    return ((run.summary or {}).get("totals") or {}).get(kind)


def result_totals(session: Session, runs: list[Run]) -> dict[str, dict[str, Any]]:
    """For each run: outcome counts, flaky and new-failure totals, outcome counts per file, device totals."""
    out: dict[str, dict[str, Any]] = {}
    missing = []
    for run in runs:
        found = CACHE.get(_key(session, run, "results") or ()) or _stored(run, "results")
        if found is not None:
            out[run.id] = found
        else:
            missing.append(run)
    out.update(computed.result_totals(session, [run.id for run in missing]))
    for run in runs:
        key = _key(session, run, "results")
        if key:
            CACHE.put(key, out[run.id])
    return out


def explanation_totals(session: Session, run: Run) -> dict[str, Any]:
    """Decisions per (stage, selected), and the upstream files named as evidence for selected tests."""
    key = _key(session, run, "explanations")
    cached = CACHE.get(key) if key else None
    if cached is not None:
        return cached
    raw = _stored(run, "explanations") or computed.explanation_totals(session, run.id)
    totals = {"decisions": {(stage, bool(selected)): n for stage, selected, n in raw["decisions"]},
              "changed_files": raw["changed_files"]}
    if key:
        CACHE.put(key, totals)
    return totals
