"""Executors run shards and store their results: ``local`` (default) or ``celery`` (Redis)."""
from __future__ import annotations

from relay.config import Settings
from relay.errors import UserError
from relay.execution.base import Executor, ShardDone, ShardJob

EXECUTORS = ("local", "celery")


def make_executor(settings: Settings, name: str | None = None) -> Executor:
    name = name or settings.executor
    if name == "local":
        from relay.execution.local import LocalExecutor

        return LocalExecutor(settings.resolved_database_url, settings.resolved_cache_dir)
    if name == "celery":
        if not settings.broker_url:
            raise UserError("the celery executor needs a broker", hint="pass --broker redis://HOST:PORT/0 "
                            "or set RELAY_BROKER_URL")
        from relay.execution.celery_executor import CeleryExecutor

        return CeleryExecutor(settings.broker_url, database_url=settings.resolved_database_url,
                              lease_seconds=settings.lease_seconds)
    raise UserError(f"unknown executor {name!r}", hint=f"choose one of: {', '.join(EXECUTORS)}")


__all__ = ["EXECUTORS", "Executor", "ShardDone", "ShardJob", "make_executor"]

