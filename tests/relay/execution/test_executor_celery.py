"""The Celery executor with a real redis-server and real `relay-cli worker` processes."""
from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from relay.execution.base import ShardJob
from relay.execution.celery_executor import CeleryExecutor
from relay.storage import TestResult, session_scope
from relay.storage.results import load_records
from tests.relay.runner_helpers import CRASH_FILE, FLAKY_FILE, ids, make_checkout
from tests.relay.storage_helpers import new_run

pytestmark = pytest.mark.integration

# Each run of the slow test appends a line, so the test can see a shard executed twice.
SLOW_FILE = '''
import time
from pathlib import Path

def test_slow_marker():
    with Path(__file__).with_name("starts").open("a") as starts:
        starts.write("start\\n")
    time.sleep(4)

def test_quick():
    pass
'''


TAKEOVER = 4.0  # seconds: 2 s shard leases (production: 120, i.e. 60 s leases)
SHORT_LEASES = {"RELAY_TAKEOVER_SECONDS": str(TAKEOVER)}


def wait_until(check, timeout=90.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def test_two_workers_run_shards_and_store_them(tmp_path, redis_url, celery_worker):
    database_url = f"sqlite:///{tmp_path / 'relay.db'}"
    run_id = new_run(database_url, executor="celery")
    checkout = make_checkout(tmp_path / "upstream", {"test_crash.py": CRASH_FILE, "test_flaky.py": FLAKY_FILE})
    for name in ("a", "b"):
        celery_worker(redis_url, database_url=database_url, name=name)
    jobs = [ShardJob(run_id, 0, ids("test_crash.py", "test_before_crash", "test_aborts", "test_after_crash"),
                     upstream=str(checkout), sha=None, checkout=str(checkout), reruns=1),
            ShardJob(run_id, 1, ids("test_flaky.py", "test_flaky", "test_always_fails"),
                     upstream=str(checkout), sha=None, checkout=str(checkout), reruns=1)]
    done = CeleryExecutor(redis_url, timeout=120).execute(jobs)
    assert [(d.shard, d.stored) for d in done] == [(0, True), (1, True)]
    outcomes = {r.test_id.rsplit("::", 1)[1]: (r.outcome, r.shard, r.flaky) for r in load_records(database_url, run_id)}
    assert outcomes == {"test_before_crash": ("passed", 0, False), "test_aborts": ("crashed", 0, False),
                        "test_after_crash": ("passed", 0, False), "test_flaky": ("passed", 1, True),
                        "test_always_fails": ("failed", 1, False)}


def test_worker_killed_mid_shard_is_redelivered_and_stored_once(tmp_path, redis_url, celery_worker):
    database_url = f"sqlite:///{tmp_path / 'relay.db'}"
    run_id = new_run(database_url, executor="celery")
    checkout = make_checkout(tmp_path / "upstream", {"test_slow.py": SLOW_FILE})
    starts = checkout / "test" / "starts"
    first = celery_worker(redis_url, database_url=database_url, name="doomed", visibility_timeout=3, env=SHORT_LEASES)
    job = ShardJob(run_id, 0, ids("test_slow.py", "test_slow_marker", "test_quick"), upstream=str(checkout),
                   sha=None, checkout=str(checkout), reruns=0)
    executor = CeleryExecutor(redis_url, timeout=120)
    executor.dispatch([job])
    assert wait_until(lambda: starts.exists()), first.output()
    first.kill()  # mid-shard: its test process dies with it, nothing was stored
    with session_scope(database_url) as session:
        assert session.scalars(select(TestResult).where(TestResult.run_id == run_id)).all() == []
    survivor = celery_worker(redis_url, database_url=database_url, name="survivor", visibility_timeout=3,
                             env=SHORT_LEASES)
    done = executor.wait([job])  # nothing is sent again: the broker redelivers the unacknowledged shard
    assert (done[0].shard, done[0].stored) == (0, True)
    assert job.task_id in survivor.output()
    assert starts.read_text().count("start") >= 2  # the shard really ran again
    records = load_records(database_url, run_id)
    assert sorted((r.test_id.rsplit("::", 1)[1], r.outcome) for r in records) == [
        ("test_quick", "passed"), ("test_slow_marker", "passed")]


def test_run_waits_for_a_broker_that_is_down_and_dispatches_when_it_returns(tmp_path, redis_server, celery_worker):
    import threading

    database_url = f"sqlite:///{tmp_path / 'relay.db'}"
    run_id = new_run(database_url, executor="celery")
    checkout = make_checkout(tmp_path / "upstream", {"test_flaky.py": FLAKY_FILE})
    redis_server.stop()
    waits: list[str] = []
    job = ShardJob(run_id, 0, ids("test_flaky.py", "test_always_fails"), upstream=str(checkout), sha=None,
                   checkout=str(checkout), reruns=0)
    executor = CeleryExecutor(redis_server.url, timeout=120, broker_wait=120, on_wait=waits.append)
    finished: list = []
    runner = threading.Thread(target=lambda: finished.append(executor.execute([job])))
    runner.start()
    assert wait_until(lambda: len(waits) >= 2)  # it is waiting, not failing
    assert load_records(database_url, run_id) == []
    redis_server.start()
    celery_worker(redis_server.url, database_url=database_url, name="late")
    runner.join(timeout=120)
    assert finished and finished[0][0].stored
    assert [(r.outcome, r.shard) for r in load_records(database_url, run_id)] == [("failed", 0)]
    assert "unreachable, waiting" in waits[0]


def test_cancel_stops_a_worker_shard_in_the_middle_of_its_file(tmp_path, redis_url, celery_worker):
    from relay.runs.control import cancel_run

    database_url = f"sqlite:///{tmp_path / 'relay.db'}"
    run_id = new_run(database_url, executor="celery")
    checkout = make_checkout(tmp_path / "upstream", {"test_slow.py": SLOW_FILE, "test_later.py": FLAKY_FILE})
    celery_worker(redis_url, database_url=database_url)
    job = ShardJob(run_id, 0, ids("test_slow.py", "test_slow_marker", "test_quick")
                   + ids("test_later.py", "test_flaky"), upstream=str(checkout), sha=None, checkout=str(checkout))
    executor = CeleryExecutor(redis_url, timeout=120)
    executor.dispatch([job])
    assert wait_until(lambda: (checkout / "test" / "starts").exists())
    assert cancel_run(database_url, run_id, "cancelled mid-shard")
    executor.wait([job])
    stored = [r.test_id.rsplit("::", 1)[1] for r in load_records(database_url, run_id)]
    # the test under way is stopped where it is (no record), the rest of its file and the next file never start
    assert stored == []
    assert not (checkout / "test" / "flaky-count").exists()


def test_worker_killed_mid_shard_is_sent_again_within_the_takeover_bound(tmp_path, redis_url, celery_worker):
    """With the production visibility timeout (an hour), the broker would hold the dead worker's shard that
    long; the relay sees the shard's lease lapse and sends it again, and a live worker completes it once."""
    database_url = f"sqlite:///{tmp_path / 'relay.db'}"
    run_id = new_run(database_url, executor="celery")
    checkout = make_checkout(tmp_path / "upstream", {"test_slow.py": SLOW_FILE})
    starts = checkout / "test" / "starts"
    doomed = celery_worker(redis_url, database_url=database_url, name="doomed", env=SHORT_LEASES)
    job = ShardJob(run_id, 0, ids("test_slow.py", "test_slow_marker", "test_quick"), upstream=str(checkout),
                   sha=None, checkout=str(checkout), reruns=0)
    executor = CeleryExecutor(redis_url, timeout=120, database_url=database_url, lease_seconds=TAKEOVER / 2)
    executor.dispatch([job])
    assert wait_until(lambda: starts.exists()), doomed.output()
    doomed.kill()
    killed = time.monotonic()
    survivor = celery_worker(redis_url, database_url=database_url, name="survivor", env=SHORT_LEASES)
    done = executor.wait([job])
    assert (done[0].shard, done[0].stored) == (0, True)
    assert job.task_id in survivor.output()
    assert starts.read_text().count("start") == 2  # once on the dead worker, once on the survivor: never in parallel
    assert sorted((r.test_id.rsplit("::", 1)[1], r.outcome) for r in load_records(database_url, run_id)) == [
        ("test_quick", "passed"), ("test_slow_marker", "passed")]
    print(f"shard completed {time.monotonic() - killed:.1f}s after kill -9 (4 s of it the test itself)")
