"""The webhook relay assembled: receiver app, background executor and sweeper, for serve and WSGI."""
from __future__ import annotations

from dataclasses import dataclass

from flask import Flask

from relay.config import Settings
from relay.reporting.reports import ReportOptions, Reporter
from relay.sweeper import Sweeper, SweeperThread, SweepOptions
from relay.webhook.app import create_app
from relay.webhook.executors import ThreadExecutor
from relay.webhook.policy import TriggerPolicy
from relay.webhook.worker import process_event

DEFAULT_SWEEP_INTERVAL = 60.0


@dataclass
class RelayService:
    app: Flask
    executor: ThreadExecutor
    sweeper: Sweeper
    sweeper_thread: SweeperThread | None = None

    def start_sweeping(self, interval: float = DEFAULT_SWEEP_INTERVAL) -> None:
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
    executor = ThreadExecutor(lambda event_id: process_event(settings, policy, event_id, reporter))
    app = create_app(settings, policy=policy, executor=executor)
    sweeper = Sweeper(settings, policy, reporter, executor.submit, in_flight=lambda: set(executor.in_flight),
                      options=sweep_options)
    return RelayService(app, executor, sweeper)
