"""Keep a `relay-cli eval` report in the database, so the dashboard can chart recall over time."""
from __future__ import annotations

from relay.storage import EvalRun, init_db, session_scope

SELECTOR_FIELDS = ("test_recall", "cause_recall", "fraction_by_count", "fraction_by_duration", "apfdc")


def store_eval(database_url: str, report: dict, *, upstream: str, agent: str) -> str:
    """Store ``report`` (eval.json's document); returns the eval run's id."""
    init_db(database_url)
    selector = report["strategies"][0]  # the selector's own row comes first
    with session_scope(database_url) as session:
        row = EvalRun(upstream=upstream, from_ref=report["from_ref"], to_ref=report["to_ref"], agent=agent,
                      regressions=report["regressions"], selector_seconds=report.get("selector_seconds"),
                      report=report, **{name: selector.get(name) for name in SELECTOR_FIELDS})
        session.add(row)
        session.flush()
        return row.id
