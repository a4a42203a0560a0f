"""Celery tasks. A worker reads its database and cache settings from its own environment."""
from __future__ import annotations

from dataclasses import asdict

from relay.config import load_settings
from relay.execution.base import ShardJob
from relay.execution.celery_app import RUN_SHARD, app
from relay.execution.shard_task import execute_shard


@app.task(name=RUN_SHARD, acks_late=True, reject_on_worker_lost=True)
def run_shard_task(job: dict) -> dict:
    """Run one shard and store its results; a redelivery of a stored shard does nothing."""
    settings = load_settings()
    done = execute_shard(ShardJob.from_dict(job), database_url=settings.resolved_database_url,
                         cache_dir=settings.resolved_cache_dir, lease_seconds=settings.lease_seconds)
    return asdict(done)
