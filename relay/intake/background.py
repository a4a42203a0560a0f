"""Where deliveries (and the dashboard's re-runs) are worked on: one background thread per app.

With a database given, each item is owned through a lease (relay.storage.leases) from the moment
it is accepted until its work is done, renewed by a heartbeat: if this process dies, the lease
lapses and the next relay's sweeper takes the item over, exactly once.
"""
from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from relay.storage import leases

log = logging.getLogger(__name__)


class BackgroundThread:
    """One background thread: runs are CPU-heavy, so they queue rather than compete."""

    def __init__(self, work: Callable[[str], object], *, db_url: str | None = None, lease_seconds: float = 60.0,
                 lease_prefix: str = "event:") -> None:
        self._work = work
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="relay-run")
        self.in_flight: set[str] = set()  # ids queued or running here
        self.db_url, self.lease_seconds, self.lease_prefix = db_url, lease_seconds, lease_prefix
        self.heartbeat = leases.Heartbeat(db_url, lease_seconds) if db_url else None

    def submit(self, item_id: str) -> Future | None:
        """Queue ``item_id``; None when another live process owns it (its lease is held)."""
        name = self.lease_prefix + item_id
        if self.heartbeat is not None:
            if not leases.acquire(self.db_url, name, self.lease_seconds):
                log.info("%s is owned by another relay; not taken", name)
                return None
            self.heartbeat.hold(name)
        self.in_flight.add(item_id)
        return self._pool.submit(self._run, item_id)

    def _run(self, item_id: str) -> object:
        name = self.lease_prefix + item_id
        try:
            return self._work(item_id)
        except Exception as exc:  # the work logs its own failures; this says only that it ended so
            log.error("background work on %s ended with %s: %s", item_id, type(exc).__name__, exc)
            return None
        finally:
            self.in_flight.discard(item_id)
            if self.heartbeat is not None:
                self.heartbeat.drop(name)
                leases.release(self.db_url, name)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)
        if self.heartbeat is not None:
            self.heartbeat.stop()
