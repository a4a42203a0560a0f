"""The work behind a delivery, outside the request: create the run, report, execute, report.

Runs in the relay's background thread (the run's shards go to Celery workers when
RELAY_BROKER_URL is set), and again from the sweeper for work left behind.
"""
from __future__ import annotations

import logging
from dataclasses import replace

from pydantic import ValidationError

from relay.config import Settings
from relay.reporting.reports import ReportContext, Reporter
from relay.reporting.run_facts import load_run_facts
from relay.run_control import CANCELLABLE, cancel_run
from relay.storage import Event, Run, session_scope
from relay.webhook.events import ChangeRequest, Decision, PayloadError, decide
from relay.webhook.merge_check import MergeUnverified, merged_change
from relay.webhook.payloads import PullRequestEvent
from relay.webhook.policy import TriggerPolicy
from relay.webhook.store import mark_event

log = logging.getLogger(__name__)
LATER_DELIVERIES_CHECKED = 500


def report_context(decision: Decision, event: Event, policy: TriggerPolicy) -> ReportContext:
    change = decision.change
    if decision.crcr is not None:
        event_type, delivery_id, payload = decision.crcr.event_type, decision.crcr.delivery_id, decision.crcr.payload
    else:
        event_type, delivery_id, payload = event.event_type, event.delivery_id or event.id, event.payload
    return ReportContext(event_type=event_type, delivery_id=delivery_id, payload=payload,
                         repository=change.repository, head_sha=change.head_sha, check_name=policy.check_name,
                         want_check_run=policy.wants_check_run(change.labels))


def _rerun_source(db_url: str, run_id: str, policy: TriggerPolicy) -> tuple[Decision, Event] | None:
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
    from relay import pipeline  # the runner: imported here so the receiver starts without loading it

    db_url = settings.resolved_database_url
    with session_scope(db_url) as session:
        event = session.get(Event, event_id)
        session.expunge(event)
    decision = decide(event.event_type, event.payload, policy)
    source_event = event
    if decision.action == "rerun":
        found = _rerun_source(db_url, decision.rerun_of, policy)
        if found is None:
            mark_event(db_url, event_id, "ignored", f"re-requested run {decision.rerun_of} is unknown")
            return None
        original, source_event = found
        decision = replace(original, reason=decision.reason)
    if decision.change is None:
        return None
    change: ChangeRequest = decision.change
    if event.run_id and _run_status(db_url, event.run_id) != "queued":
        return event.run_id  # already worked on (a second hand-over of the same event)
    if event.run_id is None and change.pr_number is not None:
        superseded = superseded_by_later_delivery(db_url, event, change, policy)
        if superseded:
            mark_event(db_url, event_id, "ignored", superseded)
            return None
    if event.run_id is None and change.verify_merge:
        change = _verified_merge(settings, event_id, change)
        if change is None:
            return None
        decision = replace(decision, change=change)
    try:
        run_id = event.run_id or pipeline.create_run(
            settings, upstream=settings.upstream, from_ref=change.from_ref, to_ref=change.to_ref,
            trigger="crcr" if decision.crcr is not None else "webhook", event_id=event_id,
            executor="celery" if settings.broker_url else None)  # a broker means shards go to Celery workers
    except Exception as exc:  # configuration (no upstream, bad rules path): the event records why
        log.error("event %s: cannot create a run: %s", event_id, exc)
        mark_event(db_url, event_id, "failed", f"cannot create a run: {exc}")
        return None
    mark_event(db_url, event_id, "queued", decision.reason, run_id=run_id)
    ctx = report_context(decision, source_event, policy)
    reporter.started(run_id, ctx)
    new_failures: set[str] = set()
    try:
        outcome = pipeline.execute_run(settings, run_id)
        new_failures = set(outcome.new_failures or ())
    except Exception as exc:  # the run failed to run: record it, report it, keep the worker alive
        log.exception("run %s failed", run_id)
        _mark_run_error(db_url, run_id, f"{exc.__class__.__name__}: {exc}")
    reporter.finished(run_id, ctx, load_run_facts(db_url, run_id, new_failures))
    mark_event(db_url, event_id, "processed")
    return run_id


def _verified_merge(settings: Settings, event_id: str, change: ChangeRequest) -> ChangeRequest | None:
    """Merged-only mode: the change with the refs of its merge on GitHub, or None (the event says why)."""
    db_url = settings.resolved_database_url
    try:
        checked = merged_change(settings, change)
    except MergeUnverified as exc:  # left queued: the sweeper hands it over again later
        mark_event(db_url, event_id, "queued", f"merge not verified yet: {exc}")
        return None
    if isinstance(checked, str):
        mark_event(db_url, event_id, "ignored", checked)
        return None
    return checked


def _pull_request_of(event_type: str, payload: dict) -> PullRequestEvent | None:
    """The pull_request event in a delivery, direct or inside a CRCR envelope; None for anything else."""
    if event_type == "repository_dispatch":
        inner = payload.get("client_payload") or {}
        if not isinstance(inner, dict) or inner.get("event_type") != "pull_request":
            return None
        payload = inner.get("payload") or {}
    elif event_type != "pull_request":
        return None
    try:
        return PullRequestEvent.model_validate(payload)
    except ValidationError:
        return None


def superseded_by_later_delivery(db_url: str, event: Event, change: ChangeRequest,
                                 policy: TriggerPolicy) -> str | None:
    """Why a queued PR delivery should not run: a later one for the same PR will, or the PR was closed unmerged."""
    with session_scope(db_url) as session:
        later = [(e.event_type, e.payload) for e in session.query(Event).filter(
            Event.received_at > event.received_at, Event.event_type.in_(("pull_request", "repository_dispatch")),
            Event.status != "failed").order_by(Event.received_at).limit(LATER_DELIVERIES_CHECKED)]
    same_pr = (change.repository.lower(), change.pr_number)
    for event_type, payload in later:
        pr = _pull_request_of(event_type, payload)
        if pr is None or (pr.repository.full_name.lower(), pr.pull_request.number) != same_pr:
            continue
        if pr.action == "closed" and not pr.pull_request.merged:
            return f"PR #{change.pr_number} was closed unmerged before its run started"
        try:
            if decide(event_type, payload, policy).action == "run":
                return f"superseded by a newer delivery for PR #{change.pr_number} ({pr.action})"
        except PayloadError:
            continue
    return None


def cancel_superseded_runs(db_url: str, event_type: str, payload: dict, decision: Decision | None) -> list[str]:
    """Cancel the unfinished runs of a PR that this delivery makes moot: a newer push (or any delivery
    that starts a run for the PR), or the PR closed unmerged. Returns the cancelled run ids."""
    pr = _pull_request_of(event_type, payload)
    if pr is None:
        return []
    starts_run = decision is not None and decision.action == "run"  # merged-only: a `closed` may start one
    closed_unmerged = not starts_run and pr.action == "closed" and not pr.pull_request.merged
    if not (starts_run or closed_unmerged):
        return []
    with session_scope(db_url) as session:
        active = session.query(Event.event_type, Event.payload, Event.run_id).join(Run, Event.run_id == Run.id).filter(
            Run.status.in_(CANCELLABLE), Event.event_type.in_(("pull_request", "repository_dispatch"))).all()
    same_pr = (pr.repository.full_name.lower(), pr.pull_request.number)
    why = (f"PR #{same_pr[1]} was closed unmerged" if closed_unmerged
           else f"superseded by a newer delivery for PR #{same_pr[1]} ({pr.action})")
    cancelled = []
    for other_type, other_payload, run_id in active:
        other = _pull_request_of(other_type, other_payload)
        if other is not None and (other.repository.full_name.lower(), other.pull_request.number) == same_pr \
                and cancel_run(db_url, run_id, why):
            log.info("run %s cancelled: %s", run_id, why)
            cancelled.append(run_id)
    return cancelled


def _run_status(db_url: str, run_id: str) -> str | None:
    with session_scope(db_url) as session:
        run = session.get(Run, run_id)
        return run.status if run else None


def _mark_run_error(db_url: str, run_id: str, message: str) -> None:
    with session_scope(db_url) as session:
        run = session.get(Run, run_id)
        if run.status not in ("passed", "failed", "cancelled", "timed_out"):
            run.status, run.error = "error", message[:2000]
