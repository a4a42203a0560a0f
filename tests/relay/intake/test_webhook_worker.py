"""The work behind a delivery, through the assembled relay over HTTP: failures are recorded and reported."""
from __future__ import annotations

import pytest

from relay.intake.service import build_service
from relay.storage import Event, Run, session_scope
from tests.relay.intake.webhook_helpers import (
    CrcrStandIn,
    ServerThread,
    as_upstream,
    fast_report_options,
    fixture,
    post_event,
    upstream_pr,
    wait_for,
)


def event_row(settings, event_id) -> Event:
    with session_scope(settings.resolved_database_url) as session:
        event = session.get(Event, event_id)
        session.expunge(event)
        return event


@pytest.fixture
def crcr():
    with CrcrStandIn() as stand_in:
        yield stand_in


def serve(settings):
    service = build_service(settings, report_options=fast_report_options())
    return service, ServerThread(service.app)


def test_without_an_upstream_the_event_records_why_no_run_started(relay_settings):
    service, server = serve(relay_settings)
    with server:
        answer = post_event(server.url, "pull_request", upstream_pr("pull_request.opened"))
        event_id = answer.json()["event_id"]
        event = wait_for(lambda: (e := event_row(relay_settings, event_id)).status == "failed" and e)
    service.stop()
    assert "no upstream given" in event.note and event.run_id is None


def test_a_run_that_cannot_run_is_stored_as_error_and_reported(relay_settings, crcr, tmp_path):
    settings = relay_settings.model_copy(update={"upstream": str(tmp_path / "no-such-upstream"),
                                                 "crcr_callback_url": crcr.url})
    service, server = serve(settings)
    with server:
        post_event(server.url, "pull_request", upstream_pr("pull_request.synchronize"), delivery="d-err")
        wait_for(lambda: len(crcr.callbacks) == 2)
    service.stop()
    with session_scope(settings.resolved_database_url) as session:
        [run] = session.query(Run).all()
        assert run.status == "error" and run.error
    workflow = crcr.callbacks[1]["workflow"]
    assert (workflow["status"], workflow["conclusion"]) == ("completed", "failure")
    assert workflow["triage_verdict"]["category"] == "infra"
    assert workflow["test_results"]["total"] == 0


def test_rerequest_of_an_unknown_run_is_ignored(relay_settings):
    payload = as_upstream(fixture("check_run.rerequested"))
    payload["check_run"].update(name="spyre/upstream", external_id="feedfacecafe")
    service, server = serve(relay_settings)
    with server:
        answer = post_event(server.url, "check_run", payload)
        assert answer.json()["status"] == "queued"
        event = wait_for(lambda: (e := event_row(relay_settings, answer.json()["event_id"])).status == "ignored"
                         and e)
    service.stop()
    assert "feedfacecafe is unknown" in event.note


def test_rerequested_check_reruns_the_same_change(relay_settings, crcr, tmp_path):
    # An upstream that does not exist makes each run end at once (as error): the wiring is what is tested.
    settings = relay_settings.model_copy(update={"upstream": str(tmp_path / "no-such-upstream"),
                                                 "crcr_callback_url": crcr.url})
    original = upstream_pr("pull_request.synchronize")
    service, server = serve(settings)
    with server:
        post_event(server.url, "pull_request", original)
        wait_for(lambda: len(crcr.callbacks) == 2)
        with session_scope(settings.resolved_database_url) as session:
            first_run = session.query(Run).one().id
        rerequest = as_upstream(fixture("check_run.rerequested"))
        rerequest["check_run"].update(name="spyre/upstream", external_id=first_run)
        assert post_event(server.url, "check_run", rerequest).json()["status"] == "queued"
        wait_for(lambda: len(crcr.callbacks) == 4)
    service.stop()
    with session_scope(settings.resolved_database_url) as session:
        first, second = session.query(Run).order_by(Run.created_at).all()
        assert second.id != first.id
        assert (second.from_ref, second.to_ref) == (first.from_ref, first.to_ref) == (
            original["pull_request"]["base"]["sha"], original["pull_request"]["head"]["sha"])
    # The re-run reports under the original delivery, as CRCR correlates by it.
    assert {c["delivery_id"] for c in crcr.callbacks[2:]} == {crcr.callbacks[0]["delivery_id"]}
    assert crcr.callbacks[3]["workflow"]["run_id"] == second.id


def test_with_a_broker_the_run_is_sent_to_celery_workers(relay_settings, tmp_path):
    settings = relay_settings.model_copy(update={"upstream": str(tmp_path / "no-such-upstream"),
                                                 "broker_url": "redis://127.0.0.1:9/0"})
    service, server = serve(settings)
    with server:
        post_event(server.url, "pull_request", upstream_pr("pull_request.opened"))
        wait_for(lambda: (events := _events(settings)) and events[0].status == "processed")
    service.stop()
    with session_scope(settings.resolved_database_url) as session:
        assert session.query(Run).one().executor == "celery"


def _events(settings) -> list[Event]:
    with session_scope(settings.resolved_database_url) as session:
        events = session.query(Event).all()
        session.expunge_all()
        return events
