"""Cancel a run, or start it again: the write actions behind the dashboard API and superseding PRs.

Cancellation is cooperative and lives in the database, so it reaches a run wherever it executes:
the pipeline checks between its steps, and every shard (in the local pool or on a Celery worker)
checks before it starts and between upstream test files (``relay.runs.machine.is_cancelled``).
"""
from __future__ import annotations

from relay.config import Settings
from relay.errors import UserError
from relay.runs import machine, pipeline
from relay.storage import Run, session_scope


def cancel_run(database_url: str, run_id: str, reason: str) -> bool:
    """Mark an unfinished run cancelled; False when it does not exist or has already finished."""
    with session_scope(database_url) as session:
        return machine.cancel(session, run_id, reason)


def rerun(settings: Settings, run_id: str, *, trigger: str = "dashboard") -> str:
    """Record a new queued run asking for what ``run_id`` asked for; returns the new run's id."""
    with session_scope(settings.resolved_database_url) as session:
        original = session.get(Run, run_id)
        if original is None:
            raise UserError(f"run {run_id} does not exist")
        request = dict((original.summary or {}).get("request", {}))
        ask = dict(upstream=original.upstream, from_ref=original.from_ref, to_ref=original.to_ref,
                   shards=original.shards, executor=original.executor)
    # A re-run writes its own artifacts: never the original's --output directory.
    return pipeline.create_run(settings, **ask, trigger=trigger, rules=request.get("rules") or [],
                               budget=request.get("budget"))
