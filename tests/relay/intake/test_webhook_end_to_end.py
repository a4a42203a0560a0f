"""End to end over real HTTP: a signed delivery for the demo upstream's 2.13 -> 2.14 change runs once
on spyre, is stored, and is reported to a CRCR stand-in and a GitHub API stand-in.

Two deliveries: CRCR's repository_dispatch of the v2.14.0 release tag push, and a pull_request
synchronize whose base is v2.13.0 and head v2.14.0 (the issue's "done when")."""
from __future__ import annotations

from pathlib import Path

import pytest

from relay.demo import init_demo
from relay.intake.payloads import ZERO_SHA
from relay.intake.policy import TriggerPolicy
from relay.intake.service import build_service
from relay.storage import Event, Run, TestResult, session_scope
from tests.relay.intake.webhook_helpers import (
    UPSTREAM,
    CrcrStandIn,
    GitHubStandIn,
    ServerThread,
    as_upstream,
    fast_report_options,
    fixture,
    post_event,
    upstream_pr,
    wait_for,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


def release_tag_dispatch(to_sha: str) -> dict:
    """CRCR forwarding upstream's push of the new release tag v2.14.0."""
    push = as_upstream(fixture("push"))
    push.update({"ref": "refs/tags/v2.14.0", "before": ZERO_SHA, "after": to_sha, "created": True,
                 "deleted": False})
    return {"action": "push", "client_payload": {"event_type": "push", "delivery_id": "upstream-v2.14.0",
                                                 "payload": push}}


def pull_request_synchronize(manifest: dict) -> dict:
    payload = upstream_pr("pull_request.synchronize")
    payload["pull_request"]["base"]["sha"] = manifest["from_sha"]
    payload["pull_request"]["head"]["sha"] = manifest["to_sha"]
    return payload


# (event header, delivery body, refs the run compares, CRCR delivery id and event type echoed)
DELIVERIES = {
    "crcr-release-tag": ("repository_dispatch", lambda m: release_tag_dispatch(m["to_sha"]),
                         lambda m: ("v2.13.0", "v2.14.0"), lambda m: ("upstream-v2.14.0", "push"), "crcr"),
    "pull-request-synchronize": ("pull_request", pull_request_synchronize,
                                 lambda m: (m["from_sha"], m["to_sha"]), lambda m: ("outer-1", "pull_request"),
                                 "webhook"),
}
@pytest.mark.slow
@pytest.mark.parametrize("kind", ["crcr-release-tag", "pull-request-synchronize"])
def test_delivery_runs_once_and_reports_new_failures(relay_settings, tmp_path, kind):
    event_header, make_body, refs, echoed, trigger = DELIVERIES[kind]
    manifest = init_demo(tmp_path / "upstream")
    with CrcrStandIn() as crcr, GitHubStandIn() as github:
        settings = relay_settings.model_copy(update={
            "upstream": str(tmp_path / "upstream"), "rules": REPO_ROOT / "testdefs" / "rules" / "demo",
            "budget": "10%", "crcr_callback_url": crcr.url, "github_token": "ghs_e2e",
            "github_api_url": github.url, "dashboard_url": "http://dash.example"})
        service = build_service(settings, TriggerPolicy(check_runs="always"), report_options=fast_report_options())
        body = make_body(manifest)
        with ServerThread(service.app) as relay:
            first = post_event(relay.url, event_header, body, delivery="outer-1")
            assert (first.status_code, first.json()["status"]) == (202, "queued")
            # A CRCR re-dispatch carries a new outer id, a GitHub redelivery the same one: both are duplicates.
            again = "outer-2" if event_header == "repository_dispatch" else "outer-1"
            assert post_event(relay.url, event_header, body, delivery=again).json()["status"] == "duplicate"
            wait_for(lambda: len(crcr.callbacks) >= 2, timeout=900, interval=0.5)
        service.stop()

    db = settings.resolved_database_url
    with session_scope(db) as session:
        [run] = session.query(Run).all()
        [event] = session.query(Event).all()
        assert (event.status, event.run_id) == ("processed", run.id)
        assert (run.from_ref, run.to_ref) == refs(manifest)
        assert (run.trigger, run.status) == (trigger, "failed")
        assert (run.from_sha, run.to_sha) == (manifest["from_sha"], manifest["to_sha"])
        stored_new = set(run.summary["new_failures"])
        outcomes = [r.outcome for r in session.query(TestResult).filter_by(run_id=run.id)]

    start, done = crcr.callbacks
    assert start["workflow"]["status"] == "in_progress"
    assert (start["delivery_id"], start["event_type"]) == echoed(manifest)
    workflow = done["workflow"]
    assert (workflow["status"], workflow["conclusion"], workflow["run_id"]) == ("completed", "failure", run.id)
    counts = workflow["test_results"]
    assert counts["total"] == len(outcomes) > 0
    assert counts["passed"] == sum(o in ("passed", "xfailed") for o in outcomes)
    reported_new = {d["name"] for d in workflow["failed_tests_detail"] if d["new_failure"]}
    assert reported_new == stored_new
    assert any("test_add_broadcast" in name for name in reported_new)  # the demo's float64 regression

    [check] = github.check_runs.values()
    assert (check["repository"], check["head_sha"]) == (UPSTREAM, manifest["to_sha"])
    assert (check["status"], check["conclusion"], check["external_id"]) == ("completed", "failure", run.id)
    assert f"http://dash.example/runs/{run.id}" in check["output"]["summary"]
    assert all(f"`{name}`" in check["output"]["summary"] for name in stored_new)
