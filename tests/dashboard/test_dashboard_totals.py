"""A finished run's totals come from runs.summary, kept by the pipeline; older runs are computed alike."""
from __future__ import annotations

from sqlalchemy import event, update

from dashboard import create_app
from dashboard.aggregates import CACHE
from relay.config import Settings
from relay.storage import Run, make_engine, session_scope
from tests.dashboard.dashboard_seed import seed_database


def statements_while(url: str, call) -> list[str]:
    seen: list[str] = []

    def record(conn, cursor, statement, *args):
        seen.append(statement)

    engine = make_engine(url)
    event.listen(engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        event.remove(engine, "before_cursor_execute", record)
    return seen


def test_stored_totals_spare_the_grouped_queries_and_match_them(tmp_path):
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    seeded = seed_database(url, runs=2, tests_per_run=60, dropped_per_run=30)
    client = create_app(Settings(database_url=url)).test_client()
    run_id = seeded.latest_run_id
    paths = [f"/api/runs/{run_id}", f"/api/runs/{run_id}/files", "/api/runs"]

    CACHE.clear()
    queries = statements_while(url, lambda: [client.get(path) for path in paths[:2]])
    grouped = [q for q in queries if "GROUP BY" in q and ("test_results" in q or "explanations" in q)]
    assert grouped == []  # the first view of a finished run reads its totals from the runs row
    kept = [client.get(path).get_json() for path in paths]
    assert "totals" not in kept[0]["summary"]

    with session_scope(url) as session:  # as a run stored before the pipeline kept totals
        session.execute(update(Run).values(summary={}))
    CACHE.clear()
    queries = statements_while(url, lambda: [client.get(path) for path in paths])
    assert any("GROUP BY" in q and "test_results" in q for q in queries)
    computed = [client.get(path).get_json() for path in paths]
    assert computed == kept
