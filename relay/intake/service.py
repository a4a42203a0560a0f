"""The webhook relay assembled: receiver app, background executor and sweeper, for serve and WSGI."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flask import Flask

from relay.config import Settings
from relay.intake.background import BackgroundThread
from relay.intake.policy import TriggerPolicy
from relay.intake.processing import process_event, report_timed_out_run
from relay.intake.receiver import create_app
from relay.reporting.reports import Reporter, ReportOptions
from relay.runs.sweeper import Sweeper, SweeperThread, SweepOptions


@dataclass
class RelayService:
    app: Flask
    executor: BackgroundThread
    sweeper: Sweeper
    sweeper_thread: SweeperThread | None = None

    def start_sweeping(self, interval: float | None = None) -> None:
        """Sweep now (a restarted relay takes over what its predecessor left) and every ``interval`` seconds
        (default: a quarter of the takeover bound)."""
        interval = self.sweeper.settings.sweep_interval if interval is None else interval
        if interval > 0 and self.sweeper_thread is None:
            self.sweeper_thread = SweeperThread(self.sweeper, interval).start()

    def stop(self) -> None:
        if self.sweeper_thread:
            self.sweeper_thread.stop()
        self.app.extensions["relay"]["journal"].close()
        self.executor.shutdown(wait=False)


def build_service(settings: Settings, policy: TriggerPolicy | None = None, *,
                  report_options: ReportOptions | None = None,
                  sweep_options: SweepOptions | None = None) -> RelayService:
    policy = policy or TriggerPolicy()
    reporter = Reporter(settings, report_options)
    executor = BackgroundThread(lambda event_id: process_event(settings, policy, event_id, reporter),
                                db_url=settings.resolved_database_url, lease_seconds=settings.lease_seconds)
    app = create_app(settings, policy=policy, executor=executor)
    sweeper = build_sweeper(settings, policy, reporter, executor.submit, options=sweep_options)
    return RelayService(app, executor, sweeper)


def build_sweeper(settings: Settings, policy: TriggerPolicy, reporter: Reporter, submit: Callable[[str], object],
                  *, options: SweepOptions | None = None) -> Sweeper:
    """The sweeper for this relay: lost deliveries go back to ``submit``, timed-out runs are reported
    as their events asked."""
    return Sweeper(settings, reporter, submit, options=options,
                   report_timed_out=lambda run_id: report_timed_out_run(settings, policy, reporter, run_id))
