"""The sweeper picks up deliveries left behind and times out stuck runs, each exactly once."""
from __future__ import annotations

import datetime as dt
import time

from relay.intake.deliveries import claim_delivery
from relay.intake.policy import TriggerPolicy
from relay.intake.service import build_sweeper
from relay.reporting.reports import Reporter
from relay.runs.sweeper import Sweeper, SweepOptions
from relay.storage import Event, Run, init_db, leases, session_scope
from tests.relay.intake.webhook_helpers import CrcrStandIn, fast_report_options, stored_run, upstream_pr

NOW_STALE = SweepOptions(stale_after=dt.timedelta(0), orphan_grace=dt.timedelta(0))


def sweeper(settings, submitted: list, **kwargs) -> Sweeper:
    return build_sweeper(settings, TriggerPolicy(), Reporter(settings, fast_report_options()), submitted.append,
                         options=kwargs.pop("options", NOW_STALE), **kwargs)


def store(settings, payload, status, delivery, event_type="pull_request") -> str:
    init_db(settings.resolved_database_url)
    return claim_delivery(settings.resolved_database_url, source="github", event_type=event_type,
                          delivery_id=delivery, payload=payload, status=status).event_id


def event_status(settings, event_id) -> str:
    with session_scope(settings.resolved_database_url) as session:
        return session.get(Event, event_id).status


def test_queued_delivery_left_behind_is_taken_over_once(relay_settings):
    event_id = store(relay_settings, upstream_pr("pull_request.opened"), "queued", "d-lost")
    settings = relay_settings
    submitted: list[str] = []
    first = sweeper(settings, submitted)
    assert first.sweep().events_requeued == [event_id]
    assert leases.live_holder(settings.resolved_database_url, f"event:{event_id}") == leases.owner_id()
    # Another relay's sweeper finds the lease live and keeps off.
    assert not leases.acquire(settings.resolved_database_url, f"event:{event_id}", 60, owner="relay-b")
    assert first.sweep().events_requeued == []
    assert submitted == [event_id]
    assert event_status(settings, event_id) == "requeued"


def test_work_another_live_relay_holds_is_left_alone(relay_settings):
    event_id = store(relay_settings, upstream_pr("pull_request.opened"), "queued", "d-busy")
    settings = relay_settings
    assert leases.acquire(settings.resolved_database_url, f"event:{event_id}", 60, owner="relay-b")
    submitted: list[str] = []
    assert sweeper(settings, submitted).sweep().events_requeued == []
    assert submitted == []


def test_a_lapsed_lease_is_taken_over(relay_settings):
    event_id = store(relay_settings, upstream_pr("pull_request.opened"), "queued", "d-orphan")
    settings = relay_settings
    assert leases.acquire(settings.resolved_database_url, f"event:{event_id}", 0.01, owner="relay-dead")
    time.sleep(0.05)
    submitted: list[str] = []
    assert sweeper(settings, submitted).sweep().events_requeued == [event_id]


def test_fresh_deliveries_are_not_taken(relay_settings):
    store(relay_settings, upstream_pr("pull_request.opened"), "queued", "d-fresh")
    submitted: list[str] = []
    sweeper(relay_settings, submitted, options=SweepOptions()).sweep()
    assert submitted == []


def test_run_stuck_past_the_timeout_is_timed_out_and_reported(relay_settings):
    with CrcrStandIn() as crcr:
        settings = relay_settings.model_copy(update={"crcr_callback_url": crcr.url})
        run_id = stored_run(settings, status="running", results=[])
        event_id = store(settings, upstream_pr("pull_request.opened"), "queued", "d-stuck")
        with session_scope(settings.resolved_database_url) as session:
            session.get(Event, event_id).run_id = run_id
            session.get(Run, run_id).started_at = dt.datetime.now(dt.timezone.utc) - dt.timedelta(hours=7)
        submitted: list[str] = []
        result = sweeper(settings, submitted, options=SweepOptions()).sweep()
        assert result.runs_timed_out == [run_id]
        with session_scope(settings.resolved_database_url) as session:
            run = session.get(Run, run_id)
            assert run.status == "timed_out" and "sweeper" in run.error
        [callback] = crcr.callbacks
        assert (callback["workflow"]["status"], callback["workflow"]["conclusion"]) == ("completed", "timed_out")
        assert sweeper(settings, submitted, options=SweepOptions()).sweep().runs_timed_out == []
