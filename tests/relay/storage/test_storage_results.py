"""Shard results are stored exactly once, on SQLite and on a real PostgreSQL server."""
from __future__ import annotations

import threading

import pytest
from sqlalchemy import func, select

from relay.execution.runner import TestRecord
from relay.storage import TestResult, session_scope
from relay.storage.results import UnknownRun, load_records, store_shard
from tests.relay.storage_helpers import fresh_postgres, new_run


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=[pytest.mark.integration, pytest.mark.slow])])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'relay.db'}"
    return fresh_postgres(request.getfixturevalue("postgres_url"))


def records(shard: int) -> list[TestRecord]:
    return [
        TestRecord("test/test_ops.py::TestCommonPRIVATEUSE1::test_add_spyre_float32", "passed", 0.5,
                   sim_stats={"cycles": 1200, "dma_bytes": 4096}, shard=shard),
        TestRecord("test/test_ops.py::TestCommonPRIVATEUSE1::test_sub_spyre_float16", "failed", 0.2,
                   message="NotImplementedError: aten::sub", traceback="Traceback...", shard=shard,
                   attempts=3),
    ]


def count(database_url: str, run_id: str) -> int:
    with session_scope(database_url) as session:
        return session.scalar(select(func.count()).select_from(TestResult).where(TestResult.run_id == run_id))


def test_a_second_delivery_stores_nothing(database_url):
    run_id = new_run(database_url)
    assert store_shard(database_url, run_id, 0, records(0)) is True
    assert store_shard(database_url, run_id, 0, records(0)) is False
    assert store_shard(database_url, run_id, 1, records(1)) is True
    assert count(database_url, run_id) == 4


def test_concurrent_deliveries_store_once(database_url):
    run_id = new_run(database_url)
    outcomes: list[bool] = []
    barrier = threading.Barrier(4)

    def deliver():
        barrier.wait()
        outcomes.append(store_shard(database_url, run_id, 2, records(2)))

    threads = [threading.Thread(target=deliver) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == [False, False, False, True]
    assert count(database_url, run_id) == 2


def test_records_round_trip_with_normalised_ids(database_url):
    run_id = new_run(database_url)
    store_shard(database_url, run_id, 0, records(0))
    loaded = load_records(database_url, run_id)
    assert [r.to_dict() for r in loaded] == [r.to_dict() for r in records(0)]
    with session_scope(database_url) as session:
        normalised = session.scalars(select(TestResult.normalised_id).where(TestResult.run_id == run_id)).all()
    assert sorted(normalised) == ["test/test_ops.py::TestCommon::test_add", "test/test_ops.py::TestCommon::test_sub"]


def test_storing_for_an_unknown_run_fails(database_url):
    new_run(database_url)
    with pytest.raises(UnknownRun):
        store_shard(database_url, "nosuchrun", 0, records(0))
