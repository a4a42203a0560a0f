"""Inputs as GitHub (or an attacker) may send them: each bad one gets its documented status and stores nothing;
legal-but-unusual ones (git-legal branch names, form-encoded bodies, no delivery id, drafts) are handled."""
from __future__ import annotations

import json
import subprocess
from urllib.parse import urlencode

import pytest
import requests

from relay.intake.bounds import MAX_DELIVERY_ID, MAX_DEPTH, MAX_EVENT_TYPE
from relay.intake.events import PayloadError, decide
from relay.intake.payloads import git_ref_name
from relay.intake.policy import TriggerPolicy
from tests.relay.intake.test_webhook_receiver import stored_events
from tests.relay.intake.webhook_helpers import SECRET, as_upstream, fixture, post_event, signature, upstream_pr

# Legal in git (checked against git itself below), and what the relay must accept.
LEGAL = ["fix(ci)", "user's-branch", "a$b", "x`id`", "semi;colon", "amp&er", "pipe|x", "quote\"d", "<angle>",
         "ünïcode/ブランチ", "release/2.14", "a.b", "feature/@x", "x" * 300]
ILLEGAL = ["-oops", "a..b", "a b", "tab\tx", "tilde~1", "caret^", "colon:x", "q?", "star*", "br[", "back\\slash",
           "a@{1}", "/lead", "trail/", "dot.", "x//y", ".hidden", "comp/.dot", "x.lock", "ctl\x01"]


def git_accepts(name: str) -> bool:
    return subprocess.run(["git", "check-ref-format", "--branch", name], capture_output=True).returncode == 0


def our_verdict(name: str) -> bool:
    try:
        git_ref_name(name)
        return True
    except ValueError:
        return False


@pytest.mark.parametrize("name", LEGAL + ILLEGAL)
def test_ref_names_are_judged_as_git_judges_them(name):
    assert our_verdict(name) == git_accepts(name), name
    assert our_verdict(name) == (name in LEGAL)


@pytest.mark.parametrize("branch", ["fix(ci)", "user's-branch", "x`touch${IFS}/tmp/relay-pwned`"])
def test_a_pr_from_a_git_legal_branch_is_stored_and_runs_on_shas(receiver, branch, tmp_path):
    payload = upstream_pr("pull_request.opened")
    payload["pull_request"]["head"]["ref"] = branch
    response = post_event(receiver.url, "pull_request", payload)
    assert response.status_code == 202 and response.json()["status"] == "queued"
    [event] = stored_events(receiver.settings)
    assert event.payload["pull_request"]["head"]["ref"] == branch  # stored verbatim
    change = decide("pull_request", event.payload, TriggerPolicy()).change
    assert (change.from_ref, change.to_ref) == (payload["pull_request"]["base"]["sha"],
                                                 payload["pull_request"]["head"]["sha"])  # runs use SHAs


def test_a_push_to_a_git_legal_branch_of_an_unwatched_repository_is_answered():
    push = as_upstream(fixture("push"), repo="someone/else")
    push.update({"ref": "refs/heads/user's-branch", "deleted": False, "after": "a" * 40})
    assert decide("push", push, TriggerPolicy()).action == "ignore"


def nested(depth: int) -> dict:
    payload: dict = {"leaf": 1}
    for _ in range(depth - 1):
        payload = {"n": payload}
    return {"action": "opened", **payload}


def _signed_post(url, body: bytes, headers: dict) -> requests.Response:
    sent = {"X-Hub-Signature-256": signature(SECRET, body), **headers}
    return requests.post(f"{url}/webhook/github", data=body, headers=sent, timeout=30)


# (what is sent, expected status, a phrase the error must contain)
BAD = {
    "nested 100 000 deep": (lambda url: post_event(url, "pull_request", b'{"a":' * 100_000 + b"1" + b"}" * 100_000),
                            400, f"deeper than {MAX_DEPTH} levels"),
    "nested past the limit": (lambda url: post_event(url, "pull_request", nested(MAX_DEPTH + 1)),
                              400, f"deeper than {MAX_DEPTH} levels"),
    "500-character delivery id": (lambda url: post_event(url, "ping", fixture("ping"), delivery="d" * 500),
                                  400, f"X-GitHub-Delivery is 500 characters; the limit is {MAX_DELIVERY_ID}"),
    "long event name": (lambda url: post_event(url, "e" * 65, fixture("ping")),
                        400, f"X-GitHub-Event is 65 characters; the limit is {MAX_EVENT_TYPE}"),
    "missing event header": (lambda url: _signed_post(url, b"{}", {"Content-Type": "application/json"}),
                             400, "missing X-GitHub-Event"),
    "form without payload": (lambda url: _signed_post(url, b"other=1", {
        "Content-Type": "application/x-www-form-urlencoded", "X-GitHub-Event": "ping"}), 400, "'payload' field"),
    "form payload not JSON": (lambda url: _signed_post(url, b"payload=%7Bnope", {
        "Content-Type": "application/x-www-form-urlencoded", "X-GitHub-Event": "ping"}),
        400, "not valid JSON (application/x-www-form-urlencoded)"),
    "XML": (lambda url: _signed_post(url, b"<ping/>", {"Content-Type": "application/xml", "X-GitHub-Event": "ping"}),
            415, "content type 'application/xml' is not accepted"),
    "JSON array": (lambda url: post_event(url, "ping", b"[1, 2]"), 400, "expected a JSON object, got list"),
    "not UTF-8": (lambda url: post_event(url, "ping", b'{"a": "\xff"}'), 400, "not valid JSON"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_gets_its_status_naming_the_problem_and_stores_nothing(receiver, case):
    send, status, phrase = BAD[case]
    response = send(receiver.url)
    assert response.status_code == status, response.text
    assert phrase in response.json()["error"]
    receiver.drain()
    assert stored_events(receiver.settings) == []
    assert receiver.executor.submitted == []


def test_nesting_at_the_limit_is_accepted(receiver):
    response = post_event(receiver.url, "star", nested(MAX_DEPTH))
    assert response.status_code == 202


def test_form_encoded_delivery_is_handled_as_github_sends_it(receiver):
    payload = upstream_pr("pull_request.opened")
    body = urlencode({"payload": json.dumps(payload)}).encode()
    response = _signed_post(receiver.url, body, {"Content-Type": "application/x-www-form-urlencoded",
                                                 "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "form-1"})
    assert response.status_code == 202 and response.json()["status"] == "queued"
    [event] = stored_events(receiver.settings)
    assert event.payload == payload
    receiver.drain()
    assert receiver.executor.submitted == [event.id]


def test_a_delivery_without_an_id_is_stored_once_under_an_id_derived_from_its_body(receiver):
    body = json.dumps(upstream_pr("pull_request.opened")).encode()
    headers = {"Content-Type": "application/json", "X-GitHub-Event": "pull_request"}
    first, again = _signed_post(receiver.url, body, headers), _signed_post(receiver.url, body, headers)
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["status"] == "duplicate" and again.json()["event_id"] == first.json()["event_id"]
    [event] = stored_events(receiver.settings)
    assert event.delivery_id.startswith("sha256:") and len(event.delivery_id) == 71
    receiver.drain()
    assert len(receiver.executor.submitted) == 1


def draft_pr(action: str) -> dict:
    payload = upstream_pr("pull_request.opened")
    payload["action"] = action
    payload["pull_request"]["draft"] = action != "ready_for_review"
    return payload


def test_drafts_wait_for_ready_for_review_by_default():
    policy = TriggerPolicy()
    for action in ("opened", "synchronize", "reopened"):
        decision = decide("pull_request", draft_pr(action), policy)
        assert decision.action == "ignore" and "draft" in decision.reason
    assert decide("pull_request", draft_pr("ready_for_review"), policy).action == "run"


def test_the_policy_can_run_drafts():
    assert decide("pull_request", draft_pr("opened"), TriggerPolicy(drafts="run")).action == "run"


def test_a_hostile_crcr_envelope_ref_is_a_payload_error():
    push = as_upstream(fixture("push"))
    push["ref"] = "refs/heads/a..b"
    with pytest.raises(PayloadError, match="ref"):
        decide("repository_dispatch", {"action": "push", "client_payload": {
            "event_type": "push", "delivery_id": "x", "payload": push}}, TriggerPolicy())
