"""Running one shard job end to end, the same in the local pool and in a Celery worker."""
from __future__ import annotations

from pathlib import Path

from relay.execution.base import OnRecord, ShardDone, ShardJob, counts_of, resolve_checkout, resolve_python
from relay.execution.runner import run_shard
from relay.runs.machine import is_cancelled
from relay.storage import session_scope
from relay.storage.results import shard_stored, store_shard


def execute_shard(job: ShardJob, *, database_url: str, cache_dir: Path,
                  on_record: OnRecord | None = None) -> ShardDone:
    """Idempotent: a shard whose results are stored is not run again (a redelivered task).

    A cancelled run's shard does not start, and one that runs stops before its next upstream file;
    what it ran by then is stored."""
    with session_scope(database_url) as session:
        if shard_stored(session, job.run_id, job.shard):
            return ShardDone(job.shard, stored=False, counts={})
    if is_cancelled(database_url, job.run_id):
        return ShardDone(job.shard, stored=False, counts={})
    checkout = resolve_checkout(job, cache_dir)
    records = run_shard(checkout, job.tests, job.runner_options(resolve_python(job, cache_dir)), shard=job.shard, on_record=on_record,
                        should_stop=lambda: is_cancelled(database_url, job.run_id))
    stored = store_shard(database_url, job.run_id, job.shard, records)
    return ShardDone(job.shard, stored=stored, counts=counts_of(records))
