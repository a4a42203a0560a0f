"""Merged-only mode: a PR runs once merged, with the merge state and commit taken from GitHub."""
from __future__ import annotations

import pytest

from relay.intake import create_app
from relay.intake.policy import TriggerPolicy
from relay.intake.processing import process_event
from relay.reporting.reports import Reporter
from relay.storage import Event, Run, session_scope
from tests.relay.intake.webhook_helpers import (
    GitHubStandIn,
    RecordingExecutor,
    ServerThread,
    fast_report_options,
    post_event,
    upstream_pr,
)

MERGED_ONLY = TriggerPolicy(merged_only=True)
MERGE, PARENT = "d" * 40, "e" * 40


@pytest.fixture
def github():
    with GitHubStandIn() as stand_in:
        yield stand_in


def closed_pr(number: int = 7, merged: bool | None = False) -> dict:
    payload = upstream_pr("pull_request.closed")
    payload["pull_request"].update(number=number, merged=merged)
    return payload


def deliver(settings, payload) -> dict:
    with ServerThread(create_app(settings, executor=RecordingExecutor(), policy=MERGED_ONLY)) as server:
        return post_event(server.url, "pull_request", payload).json()


def work_on(settings, event_id: str) -> tuple[Event, Run | None]:
    process_event(settings, MERGED_ONLY, event_id, Reporter(settings, fast_report_options()))
    with session_scope(settings.resolved_database_url) as session:
        event = session.get(Event, event_id)
        run = session.get(Run, event.run_id) if event.run_id else None
        session.expunge_all()
        return event, run


def test_only_the_closing_delivery_is_a_candidate(relay_settings):
    answer = deliver(relay_settings, upstream_pr("pull_request.opened"))
    assert answer["status"] == "ignored" and "merged-only mode" in answer["reason"]
    assert deliver(relay_settings, closed_pr())["status"] == "queued"


def test_a_merge_github_confirms_runs_from_the_merge_parent_to_the_merge_commit(relay_settings, github):
    # The payload says merged: false (unreliable in envelopes); GitHub says it was merged.
    github.pulls[7] = {"merged": True, "merge_commit_sha": MERGE}
    github.commits[MERGE] = [PARENT, "f" * 40]
    settings = relay_settings.model_copy(update={"github_api_url": github.url, "upstream": "/no/such/upstream"})
    event, run = work_on(settings, deliver(settings, closed_pr(merged=False))["event_id"])
    assert (run.from_ref, run.to_ref) == (PARENT, MERGE)
    assert any(path == "/repos/pytorch/pytorch/pulls/7" for _, path, _ in github.requests)


def test_without_a_merge_commit_the_base_branch_head_is_used(relay_settings, github):
    github.pulls[8] = {"merged": True, "merge_commit_sha": None, "base": "main"}
    github.branches["main"] = MERGE
    github.commits[MERGE] = [PARENT]
    settings = relay_settings.model_copy(update={"github_api_url": github.url, "upstream": "/no/such/upstream"})
    _event, run = work_on(settings, deliver(settings, closed_pr(number=8, merged=True))["event_id"])
    assert (run.from_ref, run.to_ref) == (PARENT, MERGE)


def test_a_pr_github_says_is_unmerged_starts_nothing(relay_settings, github):
    github.pulls[7] = {"merged": False, "state": "closed"}
    settings = relay_settings.model_copy(update={"github_api_url": github.url, "upstream": "/no/such/upstream"})
    event, run = work_on(settings, deliver(settings, closed_pr(merged=True))["event_id"])
    assert run is None and event.status == "ignored"
    assert event.note == "GitHub says PR #7 is not merged (closed); merged-only mode runs merges"


def test_github_down_leaves_the_delivery_queued_for_the_sweeper(relay_settings, github):
    github.fail_next(502, times=10)
    settings = relay_settings.model_copy(update={"github_api_url": github.url, "upstream": "/no/such/upstream"})
    event, run = work_on(settings, deliver(settings, closed_pr())["event_id"])
    assert run is None and event.status == "queued"
    assert event.note == "merge not verified yet: GitHub kept failing for PR #7 after retries"
