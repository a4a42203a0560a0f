"""The work behind a delivery, outside the request: create the run, report, execute, report.

Runs in the relay's background thread (the run's shards go to Celery workers when
RELAY_BROKER_URL is set), and again from the sweeper for work left behind.
"""
from __future__ import annotations

import logging
from dataclasses import replace

from relay.config import Settings
from relay.intake.deliveries import mark_event
from relay.intake.events import ChangeRequest, TriggerDecision, decide
from relay.intake.merge_check import MergeUnverified, merged_change
from relay.intake.policy import TriggerPolicy
from relay.intake.supersede import superseded_by_later_delivery
from relay.reporting.reports import ReportContext, Reporter
from relay.reporting.run_facts import load_run_facts
from relay.runs import machine
from relay.runs.states import FINISHED
from relay.storage import Event, session_scope
from relay.storage.event_states import EventStatus

log = logging.getLogger(__name__)


def report_context(decision: TriggerDecision, event: Event, policy: TriggerPolicy) -> ReportContext:
    change = decision.change
    if decision.crcr is not None:
        event_type, delivery_id, payload = decision.crcr.event_type, decision.crcr.delivery_id, decision.crcr.payload
    else:
        event_type, delivery_id, payload = event.event_type, event.delivery_id or event.id, event.payload
    return ReportContext(event_type=event_type, delivery_id=delivery_id, payload=payload,
                         repository=change.repository, head_sha=change.head_sha, check_name=policy.check_name,
                         want_check_run=policy.wants_check_run(change.labels))


def _rerun_source(db_url: str, run_id: str, policy: TriggerPolicy) -> tuple[TriggerDecision, Event] | None:
    """The decision and event of the run a re-requested check run names."""
    with session_scope(db_url) as session:
        original = session.query(Event).filter_by(run_id=run_id).order_by(Event.received_at).first()
        if original is None:
            return None
        session.expunge(original)
    decision = decide(original.event_type, original.payload, policy)
    return (decision, original) if decision.change else None


def process_event(settings: Settings, policy: TriggerPolicy, event_id: str, reporter: Reporter) -> str | None:
    """Do what the stored event asks; returns the run id it ran, if any."""
    from relay.runs import pipeline  # the runner: imported here so the receiver starts without loading it

    db_url = settings.resolved_database_url
    with session_scope(db_url) as session:
        event = session.get(Event, event_id)
        session.expunge(event)
    decision = decide(event.event_type, event.payload, policy)
    source_event = event
    if decision.action == "rerun":
        found = _rerun_source(db_url, decision.rerun_of, policy)
        if found is None:
            mark_event(db_url, event_id, EventStatus.IGNORED, f"re-requested run {decision.rerun_of} is unknown")
            return None
        original, source_event = found
        decision = replace(original, reason=decision.reason)
    if decision.change is None:
        return None
    change: ChangeRequest = decision.change
    if event.run_id is not None:  # taken over from a relay that stopped: resume or finish its run
        return _resume(settings, event, decision, source_event, policy, reporter)
    if change.pr_number is not None:
        superseded = superseded_by_later_delivery(db_url, event, change, policy)
        if superseded:
            mark_event(db_url, event_id, EventStatus.IGNORED, superseded)
            return None
    if change.verify_merge:
        change = _verified_merge(settings, event_id, change)
        if change is None:
            return None
        decision = replace(decision, change=change)
    try:
        run_id = pipeline.create_run(
            settings, upstream=settings.upstream, from_ref=change.from_ref, to_ref=change.to_ref,
            trigger="crcr" if decision.crcr is not None else "webhook", event_id=event_id, torch_to=change.torch_to,
            executor="celery" if settings.broker_url else None)  # a broker means shards go to Celery workers
    except Exception as exc:  # configuration (no upstream, bad rules path): the event records why
        log.error("event %s: cannot create a run: %s", event_id, exc)
        mark_event(db_url, event_id, EventStatus.FAILED, f"cannot create a run: {exc}")
        return None
    mark_event(db_url, event_id, EventStatus.QUEUED, decision.reason, run_id=run_id)
    log.info("event %s: run %s created (%s)", event_id, run_id, decision.reason)
    _execute_and_report(settings, event_id, run_id, report_context(decision, source_event, policy), reporter)
    return run_id


def _resume(settings: Settings, event: Event, decision: TriggerDecision, source_event: Event,
            policy: TriggerPolicy, reporter: Reporter) -> str:
    """The event's run, left by a relay that died: executed to its end (stored shards are kept, an active
    run resumes), each report sent once (the reporter skips what was already recorded)."""
    status = machine.status_of(settings.resolved_database_url, event.run_id)
    finished = status in FINISHED
    log.info("event %s: %s run %s (was %s)", event.id, "reporting" if finished else "resuming", event.run_id, status)
    _execute_and_report(settings, event.id, event.run_id, report_context(decision, source_event, policy), reporter,
                        execute=not finished)
    return event.run_id


def _execute_and_report(settings: Settings, event_id: str, run_id: str, ctx: ReportContext,
                        reporter: Reporter, *, execute: bool = True) -> None:
    from relay.runs import pipeline

    db_url = settings.resolved_database_url
    reporter.started(run_id, ctx)
    new_failures: set[str] = set()
    try:
        if execute:  # else the run is over: its stored verdicts say which failures are new
            new_failures = set(pipeline.execute_run(settings, run_id).new_failures or ())
    except Exception as exc:  # the run failed to run: record it, report it, keep the worker alive
        log.error("run %s: error: %s: %s", run_id, exc.__class__.__name__, exc)  # expected: no traceback
        with session_scope(db_url) as session:  # unless the pipeline (or a cancel, the sweeper) said first
            machine.error(session, run_id, f"{exc.__class__.__name__}: {exc}")
    facts = load_run_facts(db_url, run_id, new_failures)
    reporter.finished(run_id, ctx, facts)
    mark_event(db_url, event_id, EventStatus.PROCESSED)


def _verified_merge(settings: Settings, event_id: str, change: ChangeRequest) -> ChangeRequest | None:
    """Merged-only mode: the change with the refs of its merge on GitHub, or None (the event says why)."""
    db_url = settings.resolved_database_url
    try:
        checked = merged_change(settings, change)
    except MergeUnverified as exc:  # left queued: the sweeper hands it over again later
        mark_event(db_url, event_id, EventStatus.QUEUED, f"merge not verified yet: {exc}")
        return None
    if isinstance(checked, str):
        mark_event(db_url, event_id, EventStatus.IGNORED, checked)
        return None
    return checked


def report_timed_out_run(settings: Settings, policy: TriggerPolicy, reporter: Reporter, run_id: str) -> None:
    """Tell upstream that a run the sweeper timed out is over, as its event asked to be told."""
    db_url = settings.resolved_database_url
    with session_scope(db_url) as session:
        event = session.query(Event).filter_by(run_id=run_id).order_by(Event.received_at).first()
        if event is None:  # a run started by hand: nobody to report to
            return
        session.expunge(event)
    decision = decide(event.event_type, event.payload, policy)
    if decision.change is not None:
        reporter.finished(run_id, report_context(decision, event, policy), load_run_facts(db_url, run_id))
