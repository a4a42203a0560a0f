"""The sweeper: finishes what the webhook relay left behind.

- reports that failed to send (the receiver was down or refused with 429/5xx) are sent again;
- deliveries whose owner stopped (a relay killed while the delivery waited, or while its run was
  selecting or running) are taken over: their lease (relay.storage.leases) lapsed, so another
  relay's heartbeat no longer holds them; the run resumes where it stopped (stored shards are not
  run again) and is reported once;
- runs stuck in selecting/running past the run timeout are marked timed_out and reported
  (through ``report_timed_out``: what to report about a run is the intake's business).

Each takeover is a conditional lease acquisition, so of two relays sweeping one database exactly
one takes an event.
"""
from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import update

from relay.config import Settings
from relay.reporting.report_states import UNSENT, ReportStatus
from relay.reporting.reports import Reporter
from relay.runs import machine
from relay.runs.states import EXECUTING
from relay.storage import Event, Report, Run, leases, session_scope
from relay.storage.event_states import UNFINISHED, EventStatus

log = logging.getLogger(__name__)


@dataclass
class SweepOptions:
    stale_after: dt.timedelta = dt.timedelta(minutes=10)  # a delivery queued longer is presumed lost
    run_timeout: dt.timedelta = dt.timedelta(hours=6)  # a run selecting/running longer is timed_out
    max_report_attempts: int = 10
    # How old an unowned delivery must be before it counts as left behind (None: one lease period): a
    # delivery just stored is handed over a moment later, after the answer, by its own relay.
    orphan_grace: dt.timedelta | None = None


@dataclass
class SweepResult:
    reports_sent: list[int] = field(default_factory=list)
    reports_failed: list[int] = field(default_factory=list)
    events_requeued: list[str] = field(default_factory=list)
    runs_timed_out: list[str] = field(default_factory=list)


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)  # SQLite drops the zone


class Sweeper:
    def __init__(self, settings: Settings, reporter: Reporter, submit: Callable[[str], object], *,
                 report_timed_out: Callable[[str], object] = lambda run_id: None,
                 options: SweepOptions | None = None) -> None:
        self.settings, self.reporter, self.submit = settings, reporter, submit
        self.report_timed_out = report_timed_out
        self.options = options or SweepOptions()
        self.db_url = settings.resolved_database_url

    def sweep(self) -> SweepResult:
        result = SweepResult()
        self._time_out_stuck_runs(result)
        self._retry_reports(result)
        self._take_over_orphaned_events(result)
        return result

    def _retry_reports(self, result: SweepResult) -> None:
        # A pending report is only abandoned once it is old: a fresh one is being sent by its run's thread.
        cutoff = _utcnow() - self.options.stale_after
        with session_scope(self.db_url) as session:
            ids = [r.id for r in session.query(Report).filter(
                Report.status.in_(UNSENT),
                Report.attempts < self.options.max_report_attempts).order_by(Report.id)
                if r.status == ReportStatus.FAILED or _aware(r.updated_at) < cutoff]
        for report_id in ids:  # in creation order: a run's start before its completion
            status = self.reporter.deliver(report_id)
            (result.reports_sent if status == ReportStatus.SENT else result.reports_failed).append(report_id)

    def _take_over_orphaned_events(self, result: SweepResult) -> None:
        """Unfinished deliveries nobody holds a lease on: their owner died (or never took them, if it died
        between storing and handing over; hence the grace of one lease period after arrival)."""
        lease_seconds = self.settings.lease_seconds
        grace = _utcnow() - (self.options.orphan_grace if self.options.orphan_grace is not None
                             else dt.timedelta(seconds=lease_seconds))
        with session_scope(self.db_url) as session:
            unfinished = [(e.id, e.status) for e in session.query(Event).filter(
                Event.status.in_(UNFINISHED)).order_by(Event.received_at)
                if _aware(e.received_at) < grace]
        if not unfinished:
            return
        held = leases.held_names(self.db_url, "event:")
        for event_id, status in unfinished:
            name = f"event:{event_id}"
            if name in held or not leases.acquire(self.db_url, name, lease_seconds):
                continue  # alive elsewhere, or another sweeper took it just now
            with session_scope(self.db_url) as session:
                session.execute(update(Event).where(Event.id == event_id).values(
                    status=EventStatus.REQUEUED, note=f"taken over by {leases.owner_id()} (was {status}; its owner stopped)"))
            log.info("event %s: taken over (was %s; its owner stopped heartbeating)", event_id, status)
            self.submit(event_id)  # ours now: the executor renews the lease it finds held by this process
            result.events_requeued.append(event_id)

    def _time_out_stuck_runs(self, result: SweepResult) -> None:
        cutoff = _utcnow() - self.options.run_timeout
        with session_scope(self.db_url) as session:
            stuck = [r.id for r in session.query(Run).filter(Run.status.in_(EXECUTING))
                     if _aware(r.started_at or r.created_at) < cutoff]
        why = f"no result within {self.options.run_timeout}; marked timed_out by the sweeper"
        for run_id in stuck:
            with session_scope(self.db_url) as session:
                if not machine.time_out(session, run_id, why):
                    continue  # it finished (or another sweeper got it) meanwhile
            result.runs_timed_out.append(run_id)
            self.report_timed_out(run_id)


class SweeperThread:
    """Calls ``sweeper.sweep()`` every ``interval`` seconds until stopped; an error is logged, not fatal."""

    def __init__(self, sweeper: Sweeper, interval: float) -> None:
        self.sweeper, self.interval = sweeper, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="relay-sweeper", daemon=True)

    def start(self) -> SweeperThread:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while True:  # first at once: a restarted relay takes over what its predecessor left
            try:
                self.sweeper.sweep()
            except Exception as exc:  # the database is down, say: the next sweep tries again
                log.error("sweep failed: %s: %s", type(exc).__name__, exc)
            if self._stop.wait(self.interval):
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
