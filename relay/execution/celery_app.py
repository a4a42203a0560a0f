"""The Celery application: Redis as broker and result backend.

Delivery guarantees (see docs/runner.md and docs/deployment.md):
- ``task_acks_late``: a shard's message is acknowledged only after its results are stored, so a
  worker that dies mid-shard leaves the message unacknowledged.
- ``worker_prefetch_multiplier=1``: a worker reserves only the shards it is running, so a dead
  worker strands no queued shard behind the one it was running.
- ``task_reject_on_worker_lost``: a pool child killed mid-task requeues the task at once.
- A worker killed outright (kill -9, a vanished machine): its shard's lease (relay.storage.leases)
  stops being renewed, and the relay waiting on the run sends the shard again once the lease has
  lapsed, within the takeover bound (``RELAY_TAKEOVER_SECONDS``, default 120 s). The new delivery
  takes the lease over; a second delivery never runs a shard whose owner is alive.
- The Redis *visibility timeout* is only the backstop for a shard nobody waits on (the relay died
  too, and the next one resends it when it resumes the run). It must exceed the longest shard, or a
  slow shard is delivered twice; that would wait on the lease, and the shard is stored once anyway.
"""
from __future__ import annotations

from celery import Celery, signals

from relay.redaction import install_log_filter

DEFAULT_VISIBILITY_TIMEOUT = 3600  # seconds; must exceed the longest shard
RESULT_EXPIRES = 7 * 24 * 3600

RUN_SHARD = "relay.run_shard"  # the task name: submitters send it by name

app = Celery("relay", include=["relay.execution.tasks"])  # the worker's app, with the tasks registered


@signals.after_setup_logger.connect
@signals.after_setup_task_logger.connect
def _mask_secrets(logger, **_kwargs) -> None:
    install_log_filter(logger)


def configure(broker_url: str, *, visibility_timeout: int = DEFAULT_VISIBILITY_TIMEOUT) -> Celery:
    """Point the worker's app at ``broker_url`` (also the result backend)."""
    app.conf.update(**app_settings(broker_url, visibility_timeout))
    return app


def client(broker_url: str) -> Celery:
    """A separate app for submitting shards and waiting for them: its backend and connection pools
    belong to ``broker_url`` alone (a process may talk to several brokers over its life)."""
    submitter = Celery("relay-client", set_as_current=False)
    submitter.conf.update(**app_settings(broker_url, DEFAULT_VISIBILITY_TIMEOUT))
    return submitter


def app_settings(broker_url: str, visibility_timeout: int) -> dict:
    transport = {
        "visibility_timeout": visibility_timeout,
        # Sweep for unacknowledged messages of dead workers often enough to notice them promptly.
        "unacked_restore_interval": max(1, min(10, visibility_timeout // 2)),
        "unacked_restore_throttle": 1,
    }
    return dict(
        broker_url=broker_url,
        result_backend=broker_url,
        broker_transport_options=transport,
        result_backend_transport_options={"visibility_timeout": visibility_timeout},
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        result_serializer="json",
        accept_content=["json"],
        result_expires=RESULT_EXPIRES,
        task_track_started=True,
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
    )
