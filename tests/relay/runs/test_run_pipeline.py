"""The pipeline on a small real upstream git repo: create/execute split, executors, storage backends."""
from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from relay.config import Settings
from relay.runs.pipeline import create_run
from relay.storage import Run, TestResult, session_scope
from tests.relay.storage_helpers import fresh_postgres
from tests.relay.upstream_helpers import EXPECTED, make_upstream


def settings_in(tmp_path, **fields) -> Settings:
    return Settings(data_dir=tmp_path / "data", **fields)


def stored(settings: Settings, run_id: str) -> dict[str, tuple[str, str]]:
    with session_scope(settings.resolved_database_url) as session:
        rows = session.scalars(select(TestResult).where(TestResult.run_id == run_id)).all()
        return {r.test_id: (r.outcome, r.verdict) for r in rows}


def test_queued_run_executes_later_and_only_once(execute_run, tmp_path):
    upstream = make_upstream(tmp_path / "upstream")
    settings = settings_in(tmp_path)
    run_id = create_run(settings, upstream=str(upstream), from_ref="2.13", to_ref="2.14", trigger="webhook")
    with session_scope(settings.resolved_database_url) as session:
        assert session.get(Run, run_id).status == "queued"
    seen: list[str] = []
    outcome = execute_run(settings, run_id, progress=lambda stage, message, done, total: seen.append(stage))
    assert outcome.status == "failed"
    assert sorted(outcome.new_failures) == sorted(EXPECTED)
    assert {"resolve", "checkout", "run"} <= set(seen)
    assert stored(settings, run_id) == EXPECTED  # only the changed file was selected
    with session_scope(settings.resolved_database_url) as session:  # kept for the dashboard's first view
        totals = session.get(Run, run_id).summary["totals"]
    assert totals["results"]["counts"] == {"failed": 1, "crashed": 1}
    assert totals["results"]["new_failures"] == 2 and totals["results"]["files"] == {
        "test/test_math.py": {"failed": 1, "crashed": 1}}
    assert sum(n for _stage, selected, n in totals["explanations"]["decisions"] if selected) == 2
    lines = [json.loads(line) for line in (outcome.output_dir / "results.jsonl").read_text().splitlines()]
    assert {r["id"]: (r["outcome"], r["verdict"]) for r in lines} == EXPECTED
    again = execute_run(settings, run_id)  # finished: returned as is, nothing re-run
    assert (again.status, again.new_failures) == (outcome.status, outcome.new_failures)
    assert len(stored(settings, run_id)) == len(EXPECTED)


def test_runner_settings_reach_the_shards(run_change, tmp_path):
    upstream = make_upstream(tmp_path / "upstream")
    settings = settings_in(tmp_path, reruns=0)
    outcome = run_change(settings, upstream=str(upstream), from_ref="2.13", to_ref="2.14")
    with session_scope(settings.resolved_database_url) as session:
        attempts = {r.test_id: r.attempts for r in session.scalars(select(TestResult)
                                                                    .where(TestResult.run_id == outcome.run_id))}
    assert attempts == {test_id: 1 for test_id in EXPECTED}  # the default would re-run each failure once


@pytest.mark.integration
def test_celery_with_two_workers_stores_the_same_outcomes_as_local(run_change, tmp_path, redis_url, celery_worker, postgres_url):
    upstream = make_upstream(tmp_path / "upstream")
    database_url = fresh_postgres(postgres_url)
    local = run_change(settings_in(tmp_path, database_url=database_url), upstream=str(upstream),
                       from_ref="2.13", to_ref="2.14", shards=2)
    for name in ("a", "b"):
        celery_worker(redis_url, database_url=database_url, name=name)
    settings = settings_in(tmp_path, database_url=database_url, broker_url=redis_url, executor="celery")
    remote = run_change(settings, upstream=str(upstream), from_ref="2.13", to_ref="2.14", shards=2)
    assert stored(settings, remote.run_id) == stored(settings, local.run_id) == EXPECTED
    assert remote.new_failures == local.new_failures
    with session_scope(database_url) as session:
        assert session.get(Run, remote.run_id).executor == "celery"
