"""The same queries on PostgreSQL: JSON casts, grouped counts, ordering and timezones behave alike."""
from __future__ import annotations

import pytest

from dashboard import create_app
from relay.config import Settings
from tests.dashboard.dashboard_seed import FLAKY_TEST, NEW_FAILURE_TEST, fresh_postgres_database, seed_database

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pg_client(postgres_url):
    seeded = seed_database(fresh_postgres_database(postgres_url))
    return create_app(Settings(database_url=seeded.url)).test_client(), seeded


def test_runs_list_and_worst_first_on_postgres(pg_client) -> None:
    client, seeded = pg_client
    newest = client.get("/api/runs?per_page=2").get_json()
    assert newest["total"] == 7 and [r["id"] for r in newest["items"]] == [seeded.queued_run_id,
                                                                           seeded.latest_run_id]
    assert newest["items"][1]["created_at"].endswith("Z")
    rates = [r["pass_rate"] for r in client.get("/api/runs?sort=worst").get_json()["items"]
             if r["pass_rate"] is not None]
    assert rates == sorted(rates)


def test_run_detail_results_and_history_on_postgres(pg_client) -> None:
    client, seeded = pg_client
    run = client.get(f"/api/runs/{seeded.latest_run_id}").get_json()
    assert {f["file"] for f in run["changed_files"]} >= {"torch/testing/_internal/common_methods_invocations.py"}
    assert run["funnel"]["dropped"] == {"diff": 0, "rules": 7, "agent": 7, "verify": 6}
    results = client.get(f"/api/runs/{seeded.latest_run_id}/results?per_page=1").get_json()
    assert results["items"][0]["test_id"] == NEW_FAILURE_TEST and results["total"] == 40
    history = client.get("/api/tests/history", query_string={"id": FLAKY_TEST}).get_json()
    assert history["flips"] == 5 and [p["run_id"] for p in history["timeline"]] == seeded.run_ids
    assert run["sim_totals"]["op_count"] > 0 and run["sim_totals"]["unsupported_ops"] == 0
    health = client.get("/api/health").get_json()
    assert health["database"]["dialect"] == "postgresql" and health["reports"]["counts"]["failed"] == 1


def test_pages_render_on_postgres(pg_client) -> None:
    client, seeded = pg_client
    for path in ("/", f"/runs/{seeded.latest_run_id}", f"/runs/{seeded.latest_run_id}/selection",
                 f"/tests?id={FLAKY_TEST}", "/health"):
        assert client.get(path).status_code == 200, path
