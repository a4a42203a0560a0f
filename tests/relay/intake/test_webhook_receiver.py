"""The receiver over real HTTP: signatures, bad input, dedupe, and each GitHub fixture payload."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from relay.storage import Event, session_scope
from tests.relay.intake.webhook_helpers import SECRET, as_upstream, fixture, post_event, signature, upstream_pr


def stored_events(settings) -> list[Event]:
    with session_scope(settings.resolved_database_url) as session:
        events = session.query(Event).order_by(Event.received_at).all()
        session.expunge_all()
        return events


def test_signed_pull_request_is_stored_queued_and_answered_202(receiver):
    response = post_event(receiver.url, "pull_request", upstream_pr("pull_request.synchronize"),
                          delivery="d-sync-1")
    assert response.status_code == 202
    assert response.json()["status"] == "queued"
    [event] = stored_events(receiver.settings)
    assert (event.source, event.event_type, event.delivery_id, event.status) == (
        "github", "pull_request", "d-sync-1", "queued")
    assert event.payload["action"] == "synchronize"
    receiver.drain()  # handed over after the answer
    assert receiver.executor.submitted == [event.id]


@pytest.mark.parametrize("header", [None, "sha256=" + "0" * 64, "sha1=abc", "sha256=deadbeef"])
def test_missing_or_wrong_signature_is_401_and_stores_nothing(receiver, header):
    body = json.dumps(as_upstream(fixture("pull_request.opened"))).encode()
    headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "d-bad"}
    if header:
        headers["X-Hub-Signature-256"] = header
    response = requests.post(f"{receiver.url}/webhook/github", data=body, headers=headers, timeout=10)
    assert response.status_code == 401
    assert "X-Hub-Signature-256" in response.json()["error"]
    assert stored_events(receiver.settings) == []
    assert receiver.executor.submitted == []


def test_body_signed_with_another_secret_is_rejected(receiver):
    response = post_event(receiver.url, "push", as_upstream(fixture("push")), secret="someone-else")
    assert response.status_code == 401
    assert "does not match" in response.json()["error"]


def test_altered_body_fails_the_signature(receiver):
    body = json.dumps(as_upstream(fixture("pull_request.opened"))).encode()
    headers = {"X-GitHub-Event": "pull_request", "X-Hub-Signature-256": signature(SECRET, body)}
    response = requests.post(f"{receiver.url}/webhook/github", data=body + b" ", headers=headers, timeout=10)
    assert response.status_code == 401


def test_malformed_json_is_400_and_stores_nothing(receiver):
    response = post_event(receiver.url, "pull_request", b'{"action": "opened", ', delivery="d-broken")
    assert response.status_code == 400
    assert "not valid JSON (application/json)" in response.json()["error"]
    receiver.drain()
    assert stored_events(receiver.settings) == []
    assert receiver.executor.submitted == []


def test_payload_missing_a_needed_field_is_400_naming_it(receiver):
    payload = as_upstream(fixture("pull_request.opened"))
    del payload["pull_request"]["head"]["sha"]
    response = post_event(receiver.url, "pull_request", payload)
    assert response.status_code == 400
    assert "pull_request.head.sha" in response.json()["error"]
    assert stored_events(receiver.settings) == []


def test_a_ref_git_refuses_is_refused(receiver):
    payload = as_upstream(fixture("pull_request.opened"))
    payload["pull_request"]["base"]["ref"] = "main;$(touch /tmp/pwned)"  # the space is what git refuses
    response = post_event(receiver.url, "pull_request", payload)
    assert response.status_code == 400
    assert "pull_request.base.ref" in response.json()["error"]
    assert stored_events(receiver.settings) == []


def test_unknown_event_is_202_ignored_and_recorded(receiver):
    response = post_event(receiver.url, "star", {"action": "created", "repository": {"full_name": "x/y"}})
    assert response.status_code == 202
    assert response.json()["status"] == "ignored"
    [event] = stored_events(receiver.settings)
    assert event.status == "ignored" and "star" in event.note
    receiver.drain()
    assert receiver.executor.submitted == []


def test_redelivery_is_not_run_twice(receiver):
    payload = upstream_pr("pull_request.opened")
    first = post_event(receiver.url, "pull_request", payload, delivery="d-replay")
    second = post_event(receiver.url, "pull_request", payload, delivery="d-replay")
    assert (first.status_code, second.status_code) == (202, 200)
    assert second.json()["status"] == "duplicate"
    receiver.drain()
    assert len(stored_events(receiver.settings)) == 1
    assert len(receiver.executor.submitted) == 1


def test_fifty_concurrent_redeliveries_start_one_run(receiver):
    payload = upstream_pr("pull_request.synchronize")
    with ThreadPoolExecutor(max_workers=16) as pool:
        answers = list(pool.map(lambda _: post_event(receiver.url, "pull_request", payload, delivery="d-storm"),
                                range(50)))
    codes = sorted(a.status_code for a in answers)
    assert codes.count(202) == 1 and codes.count(200) == 49
    receiver.drain()
    assert len(stored_events(receiver.settings)) == 1
    assert len(receiver.executor.submitted) == 1


def test_crcr_redispatch_of_one_upstream_delivery_runs_once(receiver):
    envelope = {"action": "pull_request", "client_payload": {
        "event_type": "pull_request", "delivery_id": "upstream-42",
        "payload": upstream_pr("pull_request.opened")}}
    first = post_event(receiver.url, "repository_dispatch", envelope, delivery="outer-1")
    second = post_event(receiver.url, "repository_dispatch", envelope, delivery="outer-2")
    assert (first.status_code, second.status_code) == (202, 200)
    [event] = stored_events(receiver.settings)
    assert (event.source, event.delivery_id) == ("crcr", "crcr:upstream-42")
    receiver.drain()
    assert len(receiver.executor.submitted) == 1


def test_crcr_envelope_missing_delivery_id_is_400(receiver):
    envelope = {"action": "push", "client_payload": {"event_type": "push", "payload": as_upstream(fixture("push"))}}
    response = post_event(receiver.url, "repository_dispatch", envelope)
    assert response.status_code == 400
    assert "delivery_id" in response.json()["error"]


def test_oversized_body_is_413(receiver):
    body = b'{"pad": "' + b"x" * (25 * 1024 * 1024 + 1) + b'"}'
    response = post_event(receiver.url, "push", body)
    assert response.status_code == 413


# Each real GitHub example payload, as GitHub sends it (repository Codertocat/Hello-World) and
# renamed to the watched upstream: (fixture, event, answer as sent, answer as upstream).
FIXTURE_CASES = [
    ("ping", "ping", "pong", "pong"),
    ("pull_request.opened", "pull_request", "ignored", "ignored"),  # base branch 'master' is not watched
    ("pull_request.synchronize", "pull_request", "ignored", "ignored"),
    ("pull_request.closed", "pull_request", "ignored", "ignored"),
    ("pull_request.labeled", "pull_request", "ignored", "ignored"),  # label 'bug' is not a trigger
    ("push", "push", "ignored", "ignored"),  # deletes a tag
    ("repository_dispatch", "repository_dispatch", "ignored", "ignored"),  # not a CRCR envelope
    ("check_run.rerequested", "check_run", "ignored", "ignored"),  # not one of the relay's checks
]


@pytest.mark.parametrize("name,event,as_sent,as_upstream_answer", FIXTURE_CASES)
def test_each_fixture_payload(receiver, name, event, as_sent, as_upstream_answer):
    sent = post_event(receiver.url, event, fixture(name))
    assert sent.status_code in (200, 202) and sent.json()["status"] == as_sent
    renamed = post_event(receiver.url, event, as_upstream(fixture(name)))
    assert renamed.json()["status"] == as_upstream_answer
    assert len(stored_events(receiver.settings)) == 2
    receiver.drain()
    assert receiver.executor.submitted == []


def test_fixture_pull_request_against_a_watched_branch_is_queued(receiver):
    for name in ("pull_request.opened", "pull_request.synchronize"):
        payload = as_upstream(fixture(name))
        payload["pull_request"]["base"]["ref"] = "main"
        assert post_event(receiver.url, "pull_request", payload).json()["status"] == "queued"
    labeled = as_upstream(fixture("pull_request.labeled"))
    labeled["pull_request"]["base"]["ref"] = "release/2.14"
    labeled["label"]["name"] = "ciflow/crcr/spyre"
    assert post_event(receiver.url, "pull_request", labeled).json()["status"] == "queued"
    receiver.drain()
    assert len(receiver.executor.submitted) == 3
