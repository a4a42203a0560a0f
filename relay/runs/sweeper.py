"""The sweeper: finishes what the webhook relay left behind.

- reports that failed to send (the receiver was down or refused with 429/5xx) are sent again;
- deliveries queued but never worked on (the relay stopped while they waited) are handed to
  the executor again;
- runs stuck in selecting/running past the run timeout are marked timed_out and reported
  (through ``report_timed_out``: what to report about a run is the intake's business).

Each pick-up is claimed with a conditional UPDATE, so two relays sweeping one database never
take the same event twice.
"""
from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import update

from relay.config import Settings
from relay.reporting.reports import Reporter
from relay.runs import machine
from relay.runs.states import EXECUTING, RunStatus
from relay.storage import Event, Report, Run, session_scope

log = logging.getLogger(__name__)


@dataclass
class SweepOptions:
    stale_after: dt.timedelta = dt.timedelta(minutes=10)  # a delivery queued longer is presumed lost
    run_timeout: dt.timedelta = dt.timedelta(hours=6)  # a run selecting/running longer is timed_out
    max_report_attempts: int = 10


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
                 in_flight: Callable[[], set[str]] = set, options: SweepOptions | None = None) -> None:
        self.settings, self.reporter, self.submit = settings, reporter, submit
        self.report_timed_out = report_timed_out
        self.in_flight = in_flight
        self.options = options or SweepOptions()
        self.db_url = settings.resolved_database_url

    def sweep(self) -> SweepResult:
        result = SweepResult()
        self._time_out_stuck_runs(result)
        self._retry_reports(result)
        self._requeue_lost_events(result)
        return result

    def _retry_reports(self, result: SweepResult) -> None:
        # A pending report is only abandoned once it is old: a fresh one is being sent by its run's thread.
        cutoff = _utcnow() - self.options.stale_after
        with session_scope(self.db_url) as session:
            ids = [r.id for r in session.query(Report).filter(
                Report.status.in_(("failed", "pending")),
                Report.attempts < self.options.max_report_attempts).order_by(Report.id)
                if r.status == "failed" or _aware(r.updated_at) < cutoff]
        for report_id in ids:  # in creation order: a run's start before its completion
            status = self.reporter.deliver(report_id)
            (result.reports_sent if status == "sent" else result.reports_failed).append(report_id)

    def _requeue_lost_events(self, result: SweepResult) -> None:
        cutoff = _utcnow() - self.options.stale_after
        busy = self.in_flight()
        with session_scope(self.db_url) as session:
            candidates = [(e.id, e.status) for e in session.query(Event).filter(
                Event.status == "queued").order_by(Event.received_at)
                if _aware(e.received_at) < cutoff and e.id not in busy
                and (e.run_id is None or session.get(Run, e.run_id).status == RunStatus.QUEUED)]
        for event_id, status in candidates:
            if not self._claim(event_id, status):
                continue
            self.submit(event_id)
            result.events_requeued.append(event_id)

    def _claim(self, event_id: str, status: str) -> bool:
        with session_scope(self.db_url) as session:
            claimed = session.execute(update(Event).where(Event.id == event_id, Event.status == status)
                                      .values(status="requeued", note=f"picked up by the sweeper (was {status})"))
            return claimed.rowcount == 1

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
        while not self._stop.wait(self.interval):
            try:
                self.sweeper.sweep()
            except Exception:
                log.exception("sweep failed")

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
