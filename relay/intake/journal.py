"""Group commit for deliveries: many requests, one transaction, each answered once its row is durable.

A request thread hands its delivery to ``IntakeJournal.record`` and waits. One writer thread takes
every delivery waiting at that moment, inserts them in one transaction (``INSERT ... ON CONFLICT
DO NOTHING`` on the delivery id: of concurrent redeliveries exactly one row wins, on SQLite and
PostgreSQL alike), commits, and wakes each request with its claim. While one commit is in
flight the next batch gathers, so a burst costs a few commits rather than one per delivery.

After the commit, the new deliveries go to ``after_commit`` on a separate thread: that work
(cancelling superseded runs, handing the delivery to the executor) happens after the answer.
If the process dies in between, the delivery is stored ``queued`` with no owner, and the next
relay or the sweeper takes it over (relay.leases).
"""
from __future__ import annotations

import datetime as dt
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from relay.intake.deliveries import Claim
from relay.storage import Event, make_engine
from relay.storage.event_states import EventStatus
from relay.storage.models import new_id, utcnow

log = logging.getLogger(__name__)
MAX_BATCH = 256
WAIT = 30.0  # seconds a request waits for its commit before it answers 503


@dataclass
class Delivery:
    """One verified, parsed delivery, as it is stored."""

    source: str
    event_type: str
    delivery_id: str
    payload: dict
    status: EventStatus
    note: str | None
    received_at: dt.datetime = field(default_factory=utcnow)
    event_id: str = field(default_factory=new_id)
    after: object = None  # what the receiver needs after the commit (its decision)
    _done: threading.Event = field(default_factory=threading.Event, repr=False)
    _claim: Claim | None = None
    _error: BaseException | None = None


class IntakeJournal:
    def __init__(self, db_url: str, after_commit: Callable[[Delivery], None] | None = None) -> None:
        self.db_url = db_url
        self.engine = make_engine(db_url)
        self._insert = {"sqlite": sqlite.insert, "postgresql": postgresql.insert}.get(self.engine.dialect.name)
        if self._insert is None:
            raise ValueError(f"the intake journal supports SQLite and PostgreSQL, not {self.engine.dialect.name}")
        self._waiting: queue.SimpleQueue[Delivery | None] = queue.SimpleQueue()
        self._after: queue.SimpleQueue[Delivery | threading.Event | None] = queue.SimpleQueue()
        self._after_commit = after_commit
        self._down_since: dt.datetime | None = None
        self._writer = threading.Thread(target=self._write_loop, name="intake-writer", daemon=True)
        self._dispatcher = threading.Thread(target=self._after_loop, name="intake-after", daemon=True)
        self._writer.start()
        self._dispatcher.start()

    def record(self, delivery: Delivery) -> Claim:
        """Store ``delivery`` durably (or find it stored); raises the database's error when it is down."""
        self._waiting.put(delivery)
        if not delivery._done.wait(WAIT):
            raise TimeoutError(f"delivery not committed within {WAIT:g}s")
        if delivery._error is not None:
            raise delivery._error
        return delivery._claim

    def drain(self, timeout: float = 30.0) -> None:
        """Wait until the work after every answer given so far is done (tests, orderly shutdown)."""
        marker = threading.Event()
        self._after.put(marker)
        marker.wait(timeout)

    def close(self) -> None:
        self._waiting.put(None)
        self._after.put(None)
        self._writer.join(timeout=10)
        self._dispatcher.join(timeout=10)

    # --- the writer ------------------------------------------------------------------------
    def _write_loop(self) -> None:
        while True:
            first = self._waiting.get()
            if first is None:
                return
            batch = [first]
            while len(batch) < MAX_BATCH:
                try:
                    item = self._waiting.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._waiting.put(None)  # stop after this batch
                    break
                batch.append(item)
            self._commit(batch)

    def _commit(self, batch: list[Delivery]) -> None:
        winners: dict[str, Delivery] = {}
        for delivery in batch:  # a redelivery inside the batch loses to the first arrival
            winners.setdefault(delivery.delivery_id, delivery)
        rows = [dict(id=d.event_id, received_at=d.received_at, source=d.source, event_type=d.event_type,
                     delivery_id=d.delivery_id, payload=d.payload, status=d.status, note=d.note)
                for d in winners.values()]
        try:
            with self.engine.begin() as connection:
                inserted = set(connection.scalars(
                    self._insert(Event).on_conflict_do_nothing(index_elements=["delivery_id"])
                    .returning(Event.id), rows))
                losers = [key for key, d in winners.items() if d.event_id not in inserted]
                existing = {key: (event_id, status) for key, event_id, status in connection.execute(
                    select(Event.delivery_id, Event.id, Event.status).where(Event.delivery_id.in_(losers)))} \
                    if losers else {}
        except SQLAlchemyError as exc:
            self._outage(exc)
            for delivery in batch:
                delivery._error = exc
                delivery._done.set()
            return
        self._recovered()
        for delivery in batch:
            winner = winners[delivery.delivery_id]
            if winner is delivery and delivery.event_id in inserted:
                delivery._claim = Claim(delivery.event_id, False, delivery.status)
            elif winner.event_id in inserted:  # a redelivery within the batch
                delivery._claim = Claim(winner.event_id, True, winner.status)
            else:
                event_id, status = existing[delivery.delivery_id]
                delivery._claim = Claim(event_id, True, status)
            delivery._done.set()
        for delivery in batch:
            if not delivery._claim.duplicate:
                self._after.put(delivery)

    def _outage(self, exc: SQLAlchemyError) -> None:
        if self._down_since is None:
            self._down_since = utcnow()
            log.error("intake: database unreachable, answering 503 until it returns: %s",
                      str(getattr(exc, "orig", exc)).strip().splitlines()[0] if str(exc).strip() else exc)

    def _recovered(self) -> None:
        if self._down_since is not None:
            log.info("intake: database reachable again after %.0fs", (utcnow() - self._down_since).total_seconds())
            self._down_since = None

    # --- after the answer ------------------------------------------------------------------
    def _after_loop(self) -> None:
        while True:
            delivery = self._after.get()
            if delivery is None:
                return
            if isinstance(delivery, threading.Event):  # drain()'s marker: everything before it is done
                delivery.set()
                continue
            if self._after_commit is None:
                continue
            try:
                self._after_commit(delivery)
            except Exception as exc:  # the delivery is stored: the sweeper picks it up later
                log.error("intake: after storing event %s: %s: %s", delivery.event_id, type(exc).__name__, exc)
