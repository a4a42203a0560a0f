"""The Celery executor: one task per shard on Redis, results stored by the workers.

While the broker is unreachable the run waits (status ``running``, nothing dispatched or lost)
and dispatches when the broker returns, for up to ``broker_wait`` seconds.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Callable

from celery.result import AsyncResult
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from relay.errors import UserError
from relay.execution.base import OnRecord, OnShardDone, ShardDone, ShardJob

log = logging.getLogger(__name__)
POLL = 0.5
BROKER_WAIT = 600.0  # seconds a run waits for an unreachable broker before it errors
UNREACHABLE = (BrokerError, RedisConnectionError, RedisTimeoutError, ConnectionError)


class CeleryExecutor:
    name = "celery"

    def __init__(self, broker_url: str, *, timeout: float | None = None, broker_wait: float = BROKER_WAIT,
                 on_wait: Callable[[str], None] | None = None, database_url: str | None = None,
                 lease_seconds: float = 60.0) -> None:
        from relay.execution.celery_app import client

        self.app = client(broker_url)
        self.broker_url = broker_url
        self.timeout = timeout  # seconds for the whole run; None: the shards' own timeouts bound it
        self.broker_wait = broker_wait
        self.on_wait = on_wait
        # With the database: shards whose worker stopped heartbeating are sent again (see _resend_orphans).
        self.database_url, self.lease_seconds = database_url, lease_seconds

    def execute(self, jobs: list[ShardJob], *, on_shard_done: OnShardDone | None = None,
                on_record: OnRecord | None = None) -> list[ShardDone]:
        """Dispatch every shard, then wait for all (per-test progress is not streamed from workers)."""
        self.dispatch(jobs)
        return self.wait(jobs, on_shard_done=on_shard_done)

    def dispatch(self, jobs: list[ShardJob]) -> None:
        from relay.execution.celery_app import RUN_SHARD

        for job in jobs:
            self._while_unreachable(lambda job=job: self.app.send_task(
                RUN_SHARD, args=[job.to_dict()], task_id=job.task_id, retry=False))

    def wait(self, jobs: list[ShardJob], *, on_shard_done: OnShardDone | None = None) -> list[ShardDone]:
        """Wait for the shards' results by task id: a redelivered task reports under the same id."""
        pending = {job.task_id: job for job in jobs}
        deadline = time.monotonic() + self.timeout if self.timeout else None
        done: list[ShardDone] = []
        resent: dict[str, float] = {}
        next_check = time.monotonic()
        while pending:
            if self.database_url and time.monotonic() >= next_check:
                self._resend_orphans(pending, resent)
                next_check = time.monotonic() + self.lease_seconds / 4
            for task_id in list(pending):
                result = AsyncResult(task_id, app=self.app)
                if not self._while_unreachable(result.ready):
                    continue
                job = pending.pop(task_id)
                if result.failed():
                    raise RuntimeError(f"shard {job.shard} of run {job.run_id} failed on a worker: {result.result!r}")
                shard_done = ShardDone(**result.result)
                done.append(shard_done)
                if on_shard_done:
                    on_shard_done(shard_done)
            if pending:
                if deadline and time.monotonic() > deadline:
                    raise TimeoutError(f"{len(pending)} shard(s) still running after {self.timeout:g}s")
                time.sleep(POLL)
        return sorted(done, key=lambda d: d.shard)

    def _resend_orphans(self, pending: dict[str, ShardJob], resent: dict[str, float]) -> None:
        """Send again each pending shard whose worker died mid-shard (its lease lapsed): the broker would
        redeliver it only after the visibility timeout, which must exceed the longest shard. The new
        delivery takes the lapsed lease over; the old message, if it ever comes back, finds the shard
        stored. At most one resend per lease period, so the new owner has time to take the lease."""
        from relay.execution.celery_app import RUN_SHARD
        from relay.execution.shard_task import shard_lease
        from relay.storage import leases

        run_ids = {job.run_id for job in pending.values()}
        lapsed = set().union(*(leases.expired_names(self.database_url, f"shard:{run_id}:") for run_id in run_ids))
        now = time.monotonic()
        for task_id, job in pending.items():
            if shard_lease(job.run_id, job.shard) in lapsed and now - resent.get(task_id, -1e9) > self.lease_seconds:
                log.warning("shard %d of run %s: its worker stopped heartbeating; sent again", job.shard, job.run_id)
                self._while_unreachable(lambda job=job: self.app.send_task(
                    RUN_SHARD, args=[job.to_dict()], task_id=job.task_id, retry=False))
                resent[task_id] = now

    def _while_unreachable(self, call):
        """``call()``, retried while the broker is unreachable, for up to ``broker_wait`` seconds."""
        give_up = time.monotonic() + self.broker_wait
        delay = 0.5
        down_since = None
        while True:
            try:
                # Probe first: celery's result consumer gives up for good after a long reconnect loop
                # if the first contact happens while Redis is down.
                self._ping()
                value = call()
                if down_since is not None:
                    log.info("broker %s reachable again after %.0fs", self._where(), time.monotonic() - down_since)
                return value
            except UNREACHABLE as exc:
                if down_since is None:  # one line per outage, not one per retry
                    down_since = time.monotonic()
                    log.error("broker %s unreachable, runs wait for it (up to %gs): %s", self._where(),
                              self.broker_wait, exc)
                if time.monotonic() > give_up:
                    raise UserError(f"cannot reach the Celery broker at {self._where()} for "
                                    f"{self.broker_wait:g}s: {exc}",
                                    hint="start redis or check --broker / RELAY_BROKER_URL") from None
                if self.on_wait:
                    self.on_wait(f"broker {self._where()} unreachable, waiting")
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _ping(self) -> None:
        import redis

        client = redis.Redis.from_url(self.broker_url, socket_connect_timeout=2, socket_timeout=2)
        try:
            client.ping()
        finally:
            client.close()

    def _where(self) -> str:
        from kombu.utils.url import maybe_sanitize_url

        return maybe_sanitize_url(self.broker_url)
