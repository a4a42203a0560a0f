"""Running one shard job end to end, the same in the local pool and in a Celery worker.

On a Celery worker the shard is owned through a lease ("shard:<run>:<n>", relay.storage.leases)
renewed by a heartbeat while it runs: a second delivery of the same task (a resend after a worker
died, a broker redelivery) waits while the owner is alive and takes over once its lease lapses,
so a shard is executed by one worker at a time and stored once.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

from relay.execution.base import OnRecord, ShardDone, ShardJob, counts_of, resolve_checkout, resolve_python
from relay.execution.runner import run_shard
from relay.runs.machine import is_cancelled
from relay.storage import leases, session_scope
from relay.storage.results import shard_stored, store_shard

log = logging.getLogger(__name__)


def shard_lease(run_id: str, shard: int) -> str:
    return f"shard:{run_id}:{shard}"


def execute_shard(job: ShardJob, *, database_url: str, cache_dir: Path, on_record: OnRecord | None = None,
                  lease_seconds: float | None = None) -> ShardDone:
    """Idempotent: a shard whose results are stored is not run again (a redelivered task).

    A cancelled run's shard does not start, and one that runs stops before its next upstream file;
    what it ran by then is stored. With ``lease_seconds``, the shard is owned through a lease."""
    if lease_seconds is None:
        return _execute(job, database_url, cache_dir, on_record)
    name = shard_lease(job.run_id, job.shard)
    while not leases.acquire(database_url, name, lease_seconds):
        if _stored(database_url, job):  # the live owner finished it meanwhile
            return ShardDone(job.shard, stored=False, counts={})
        time.sleep(max(0.2, lease_seconds / 6))  # the owner is alive: wait for it to finish or to lapse
    heartbeat = leases.Heartbeat(database_url, lease_seconds)
    heartbeat.hold(name)
    try:
        return _execute(job, database_url, cache_dir, on_record)
    finally:
        heartbeat.stop()
        leases.release(database_url, name)


def _stored(database_url: str, job: ShardJob) -> bool:
    with session_scope(database_url) as session:
        return shard_stored(session, job.run_id, job.shard)


def _execute(job: ShardJob, database_url: str, cache_dir: Path, on_record: OnRecord | None) -> ShardDone:
    if _stored(database_url, job):
        return ShardDone(job.shard, stored=False, counts={})
    if is_cancelled(database_url, job.run_id):
        return ShardDone(job.shard, stored=False, counts={})
    checkout = resolve_checkout(job, cache_dir)
    records = run_shard(checkout, job.tests, job.runner_options(resolve_python(job, cache_dir)), shard=job.shard, on_record=on_record,
                        should_stop=lambda: is_cancelled(database_url, job.run_id))
    stored = store_shard(database_url, job.run_id, job.shard, records)
    return ShardDone(job.shard, stored=stored, counts=counts_of(records))
