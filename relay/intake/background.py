"""Where deliveries (and the dashboard's re-runs) are worked on: one background thread per app."""
from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

log = logging.getLogger(__name__)


class BackgroundThread:
    """One background thread: runs are CPU-heavy, so they queue rather than compete."""

    def __init__(self, work: Callable[[str], object]) -> None:
        self._work = work
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="relay-run")
        self.in_flight: set[str] = set()  # event (or run) ids queued or running here; the sweeper leaves them alone

    def submit(self, item_id: str) -> Future:
        self.in_flight.add(item_id)
        return self._pool.submit(self._run, item_id)

    def _run(self, item_id: str) -> object:
        try:
            return self._work(item_id)
        except Exception:
            log.exception("background work on %s failed", item_id)
            raise
        finally:
            self.in_flight.discard(item_id)

    def shutdown(self, wait: bool = True) -> None:
        self._pool.shutdown(wait=wait)
