"""Which upstream refs each event compares, and why the others are ignored (pure decisions)."""
from __future__ import annotations

import pytest

from relay.intake.events import PayloadError, decide
from relay.intake.payloads import ZERO_SHA
from relay.intake.policy import TriggerPolicy
from tests.relay.intake.webhook_helpers import as_upstream, fixture, upstream_pr

POLICY = TriggerPolicy()
SHA_A, SHA_B = "a" * 40, "b" * 40


def push(ref: str, before: str = SHA_A, after: str = SHA_B, **extra) -> dict:
    payload = as_upstream(fixture("push"))
    payload.update({"ref": ref, "before": before, "after": after, "deleted": False, **extra})
    return payload


@pytest.mark.parametrize("action", ["opened", "reopened", "synchronize"])
def test_pull_request_compares_base_with_head(action):
    payload = upstream_pr("pull_request.synchronize")
    payload["action"] = action
    decision = decide("pull_request", payload, POLICY)
    pr = payload["pull_request"]
    assert decision.action == "run"
    assert (decision.change.from_ref, decision.change.to_ref) == (pr["base"]["sha"], pr["head"]["sha"])
    assert decision.change.head_sha == pr["head"]["sha"] and decision.change.pr_number == pr["number"]


def test_labeled_starts_a_run_only_for_a_trigger_label():
    payload = upstream_pr("pull_request.labeled")
    assert decide("pull_request", payload, POLICY).action == "ignore"  # label 'bug'
    payload["label"]["name"] = "ciflow/crcr/spyre"
    assert decide("pull_request", payload, POLICY).action == "run"


def test_closed_and_unwatched_branches_and_repositories_are_ignored():
    assert "closed" in decide("pull_request", upstream_pr("pull_request.closed"), POLICY).reason
    assert "feature/x" in decide("pull_request", upstream_pr("pull_request.opened", base="feature/x"), POLICY).reason
    assert "not watched" in decide("pull_request", fixture("pull_request.opened"), POLICY).reason


def test_push_to_a_watched_branch_compares_before_with_after():
    decision = decide("push", push("refs/heads/release/2.14"), POLICY)
    assert (decision.change.from_ref, decision.change.to_ref) == (SHA_A, SHA_B)
    assert decide("push", push("refs/heads/feature"), POLICY).action == "ignore"


def test_new_release_tag_compares_with_the_previous_minor_release():
    decision = decide("push", push("refs/tags/v2.14.0", before=ZERO_SHA), POLICY)
    assert (decision.change.from_ref, decision.change.to_ref, decision.change.head_sha) == (
        "v2.13.0", "v2.14.0", SHA_B)
    assert decide("push", push("refs/tags/v3.0.0", before=ZERO_SHA), POLICY).action == "ignore"
    assert decide("push", push("refs/heads/main", before=ZERO_SHA), POLICY).action == "ignore"


def test_deleted_ref_is_ignored():
    assert "deletes" in decide("push", push("refs/heads/main", after=ZERO_SHA, deleted=True), POLICY).reason


def test_rerequested_check_of_this_relay_reruns_the_named_run():
    payload = as_upstream(fixture("check_run.rerequested"))
    assert decide("check_run", payload, POLICY).action == "ignore"  # 'randscape' is another app's check
    payload["check_run"].update(name="spyre/upstream", external_id="run123")
    decision = decide("check_run", payload, POLICY)
    assert (decision.action, decision.rerun_of) == ("rerun", "run123")


def test_crcr_envelope_is_decided_by_its_inner_event():
    envelope = {"action": "push", "client_payload": {
        "event_type": "push", "delivery_id": "up-1", "payload": push("refs/tags/v2.14.0", before=ZERO_SHA)}}
    decision = decide("repository_dispatch", envelope, POLICY)
    assert decision.action == "run" and decision.crcr.delivery_id == "up-1"
    assert decision.change.to_ref == "v2.14.0"
    assert decision.change.torch_to is None  # no build named: the refs decide the torch


def test_a_crcr_envelope_naming_a_torch_build_feeds_the_to_sides_torch():
    wheel = "https://artifacts.example/pr-7/torch-2.15.0a0+git1234-cp311-cp311-linux_x86_64.whl"
    envelope = {"action": "push", "client_payload": {
        "event_type": "push", "delivery_id": "up-2", "payload": push("refs/tags/v2.14.0", before=ZERO_SHA),
        "torch_build": wheel}}
    assert decide("repository_dispatch", envelope, POLICY).change.torch_to == wheel


@pytest.mark.parametrize("client_payload,field", [
    ({"event_type": "push", "payload": {}}, "delivery_id"),
    ({"event_type": "issue", "delivery_id": "x", "payload": {}}, "event_type"),
    ({"event_type": "push", "delivery_id": "x", "payload": {"ref": "refs/heads/main"}}, "before"),
])
def test_invalid_crcr_envelope_names_the_field(client_payload, field):
    with pytest.raises(PayloadError, match=field):
        decide("repository_dispatch", {"action": "push", "client_payload": client_payload}, POLICY)


@pytest.mark.parametrize("ref", ["-oops", "refs/heads/a..b", "refs/heads/x~1", "refs/heads/a b"])
def test_hostile_ref_names_are_refused(ref):
    with pytest.raises(PayloadError, match="ref"):
        decide("push", push(ref), POLICY)
