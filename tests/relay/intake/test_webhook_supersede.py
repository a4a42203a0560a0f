"""A queued PR delivery is dropped when a newer push to the PR will run, or the PR was closed unmerged."""
from __future__ import annotations

from relay.intake import create_app
from relay.intake.policy import TriggerPolicy
from relay.intake.processing import process_event
from relay.reporting.reports import Reporter
from relay.storage import Event, Run, session_scope
from tests.relay.intake.webhook_helpers import (
    RecordingExecutor,
    ServerThread,
    fast_report_options,
    post_event,
    upstream_pr,
)


def deliver_all(settings, deliveries) -> list[str]:
    """Post the deliveries while nothing is worked on; returns their event ids in order."""
    app = create_app(settings, executor=RecordingExecutor())
    with ServerThread(app) as server:
        ids = [post_event(server.url, "pull_request", payload).json()["event_id"] for payload in deliveries]
    app.extensions["relay"]["journal"].drain()  # the superseding done after each answer
    return ids


def work_on(settings, event_id) -> Event:
    process_event(settings, TriggerPolicy(), event_id, Reporter(settings, fast_report_options()))
    with session_scope(settings.resolved_database_url) as session:
        event = session.get(Event, event_id)
        session.expunge(event)
        return event


def pr(name: str, number: int = 2, **changes) -> dict:
    payload = upstream_pr(name)
    payload["pull_request"]["number"] = number
    payload["pull_request"].update(changes)
    return payload


def test_newer_push_to_the_same_pr_supersedes_the_queued_one(relay_settings):
    older, newer = deliver_all(relay_settings, [pr("pull_request.opened"), pr("pull_request.synchronize")])
    event = work_on(relay_settings, older)
    assert (event.status, event.run_id) == ("ignored", None)
    assert "superseded by a newer delivery for PR #2 (synchronize)" in event.note


def test_pr_closed_unmerged_drops_its_queued_delivery(relay_settings):
    queued, _closed = deliver_all(relay_settings, [pr("pull_request.opened"),
                                                   pr("pull_request.closed", merged=False)])
    event = work_on(relay_settings, queued)
    assert event.status == "ignored" and "closed unmerged" in event.note


def test_other_prs_and_merges_do_not_supersede(relay_settings):
    queued, *_ = deliver_all(relay_settings, [pr("pull_request.opened"), pr("pull_request.synchronize", number=3),
                                              pr("pull_request.closed", merged=True)])
    event = work_on(relay_settings, queued)
    # It went on to create a run; this relay has no upstream configured, so that is where it stopped.
    assert event.status == "failed" and "no upstream given" in event.note


def started_run_for(settings, event_id: str, status: str = "running") -> str:
    """Link a run in ``status`` to the event, as processing it would have."""
    with session_scope(settings.resolved_database_url) as session:
        run = Run(status=status, from_ref="main", to_ref="head", upstream="upstream")
        session.add(run)
        session.flush()
        session.get(Event, event_id).run_id = run.id
        return run.id


def run_state(settings, run_id: str) -> tuple[str, str | None]:
    with session_scope(settings.resolved_database_url) as session:
        run = session.get(Run, run_id)
        return run.status, run.error


def test_newer_push_cancels_the_run_already_executing_for_the_pr(receiver):
    relay_settings = receiver.settings
    older = post_event(receiver.url, "pull_request", pr("pull_request.opened")).json()["event_id"]
    other = post_event(receiver.url, "pull_request", pr("pull_request.opened", number=3)).json()["event_id"]
    receiver.drain()  # each delivery's own after-answer work is done before its run exists, as in the relay
    executing, unrelated = started_run_for(relay_settings, older), started_run_for(relay_settings, other)
    post_event(receiver.url, "pull_request", pr("pull_request.synchronize"))
    receiver.drain()
    status, why = run_state(relay_settings, executing)
    assert status == "cancelled" and why == "superseded by a newer delivery for PR #2 (synchronize)"
    assert run_state(relay_settings, unrelated)[0] == "running"  # another PR's run goes on


def test_pr_closed_unmerged_cancels_its_executing_run_but_finished_runs_stay(receiver):
    relay_settings = receiver.settings
    first = post_event(receiver.url, "pull_request", pr("pull_request.opened")).json()["event_id"]
    second = post_event(receiver.url, "pull_request", pr("pull_request.synchronize")).json()["event_id"]
    receiver.drain()
    finished = started_run_for(relay_settings, first, status="passed")
    executing = started_run_for(relay_settings, second)
    post_event(receiver.url, "pull_request", pr("pull_request.closed", merged=False))
    receiver.drain()
    assert run_state(relay_settings, executing) == ("cancelled", "PR #2 was closed unmerged")
    assert run_state(relay_settings, finished)[0] == "passed"
