"""The local executor runs shards side by side and, like celery, never stores a shard twice."""
from __future__ import annotations

from relay.execution.base import ShardJob
from relay.storage.results import load_records
from tests.relay.runner_helpers import CRASH_FILE, FLAKY_FILE, ids, make_checkout
from tests.relay.storage_helpers import new_run


def test_shards_run_in_parallel_and_are_stored_once(tmp_path, local_executor):
    database_url = f"sqlite:///{tmp_path / 'relay.db'}"
    run_id = new_run(database_url)
    checkout = make_checkout(tmp_path / "upstream", {"test_crash.py": CRASH_FILE, "test_flaky.py": FLAKY_FILE})
    jobs = [ShardJob(run_id, 0, ids("test_crash.py", "test_aborts", "test_after_crash"), upstream=str(checkout),
                     sha=None, checkout=str(checkout), reruns=0),
            ShardJob(run_id, 1, ids("test_flaky.py", "test_always_fails"), upstream=str(checkout), sha=None,
                     checkout=str(checkout), reruns=0)]
    seen, finished = [], []
    executor = local_executor(database_url, tmp_path / "cache", workers=2)
    done = executor.execute(jobs, on_record=lambda r: seen.append(r.test_id), on_shard_done=finished.append)
    assert [(d.shard, d.stored, d.counts) for d in done] == [
        (0, True, {"crashed": 1, "passed": 1}), (1, True, {"failed": 1})]
    assert sorted(seen) == sorted(jobs[0].tests + jobs[1].tests) and len(finished) == 2
    again = executor.execute(jobs)  # a resumed run: nothing re-run, nothing stored twice
    assert [d.stored for d in again] == [False, False]
    assert len(load_records(database_url, run_id)) == 3
