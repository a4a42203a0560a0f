"""Pull requests move on: a newer push supersedes a run for the PR, closing it unmerged ends them.

Checked when a delivery arrives (its unfinished runs are cancelled at once, wherever they
execute) and again when a queued delivery is worked on (a later one for the PR will run instead).
"""
from __future__ import annotations

import logging

from pydantic import ValidationError

from relay.intake.events import ChangeRequest, PayloadError, TriggerDecision, decide
from relay.intake.payloads import PullRequestEvent
from relay.intake.policy import TriggerPolicy
from relay.runs.control import cancel_run
from relay.runs.states import ACTIVE
from relay.storage import Event, Run, session_scope
from relay.storage.event_states import EventStatus

log = logging.getLogger(__name__)
LATER_DELIVERIES_CHECKED = 500


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
            Event.status != EventStatus.FAILED).order_by(Event.received_at).limit(LATER_DELIVERIES_CHECKED)]
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


def cancel_superseded_runs(db_url: str, event_type: str, payload: dict, decision: TriggerDecision | None) -> list[str]:
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
            Run.status.in_(ACTIVE), Event.event_type.in_(("pull_request", "repository_dispatch"))).all()
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
