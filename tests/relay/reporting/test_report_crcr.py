"""CRCR callbacks over real HTTP to a stand-in receiver: shape, counts, caps, retries, sweeper resend."""
from __future__ import annotations

import pytest

from relay.reporting.reports import Reporter
from relay.reporting.run_facts import load_run_facts
from relay.runs.sweeper import Sweeper
from relay.storage import Report, session_scope
from tests.relay.intake.webhook_helpers import (
    MIXED_RESULTS,
    CrcrStandIn,
    fast_report_options,
    report_context,
    stored_run,
)


@pytest.fixture
def crcr():
    with CrcrStandIn() as stand_in:
        yield stand_in


@pytest.fixture
def settings(relay_settings, crcr):
    return relay_settings.model_copy(update={"crcr_callback_url": crcr.url,
                                             "dashboard_url": "http://dash.example/"})


def reports(settings) -> list[Report]:
    with session_scope(settings.resolved_database_url) as session:
        rows = session.query(Report).order_by(Report.id).all()
        session.expunge_all()
        return rows


def test_in_progress_then_completed_with_counts_and_failures(settings, crcr):
    run_id = stored_run(settings, results=MIXED_RESULTS)
    reporter, ctx = Reporter(settings, fast_report_options()), report_context()
    reporter.started(run_id, ctx)
    reporter.finished(run_id, ctx, load_run_facts(settings.resolved_database_url, run_id))

    start, done = crcr.callbacks
    for body in (start, done):
        assert (body["event_type"], body["delivery_id"]) == ("pull_request", "upstream-delivery-7")
        assert body["payload"] == {"action": "synchronize", "number": 7}
        assert body["workflow"]["run_id"] == run_id
        assert body["workflow"]["url"] == f"http://dash.example/runs/{run_id}"
    assert start["workflow"]["status"] == "in_progress" and "conclusion" not in start["workflow"]
    workflow = done["workflow"]
    assert (workflow["status"], workflow["conclusion"]) == ("completed", "failure")
    assert workflow["test_results"] == {"passed": 1, "failed": 2, "skipped": 1, "total": 4}
    detail = {d["name"].rsplit("::", 1)[1]: d for d in workflow["failed_tests_detail"]}
    assert set(detail) == {"test_mul_spyre_float16", "test_div_spyre_float16"}
    assert detail["test_mul_spyre_float16"]["new_failure"] is True
    assert detail["test_div_spyre_float16"]["new_failure"] is False
    assert detail["test_mul_spyre_float16"]["message"] == "mismatch"
    assert workflow["triage_verdict"]["category"] == "upstream"
    assert [r.status for r in reports(settings)] == ["sent", "sent"]


def test_passing_run_concludes_success_without_verdict(settings, crcr):
    run_id = stored_run(settings, status="passed", results=MIXED_RESULTS[:1])
    Reporter(settings, fast_report_options()).finished(
        run_id, report_context(), load_run_facts(settings.resolved_database_url, run_id))
    [body] = crcr.callbacks
    assert body["workflow"]["conclusion"] == "success"
    assert "triage_verdict" not in body["workflow"]


def test_failed_tests_are_capped_as_crcr_caps_them(settings, crcr):
    many = [(f"test/test_big.py::T::test_{i}", "failed", "new_failure", "m" * 5000) for i in range(1100)]
    run_id = stored_run(settings, results=many)
    Reporter(settings, fast_report_options()).finished(
        run_id, report_context(), load_run_facts(settings.resolved_database_url, run_id))
    workflow = crcr.callbacks[0]["workflow"]
    assert workflow["test_results"]["failed"] == 1100
    assert len(workflow["failed_tests_detail"]) == 1000
    assert max(len(d["message"]) for d in workflow["failed_tests_detail"]) == 1024


def test_rate_limited_and_unavailable_answers_are_retried(settings, crcr):
    crcr.fail_next(429, headers={"Retry-After": "0"})
    crcr.fail_next(503)
    run_id = stored_run(settings, results=MIXED_RESULTS)
    Reporter(settings, fast_report_options()).started(run_id, report_context())
    assert crcr.attempts == 3 and len(crcr.callbacks) == 1
    [report] = reports(settings)
    assert (report.status, report.attempts) == ("sent", 1)


def test_a_report_that_keeps_failing_is_recorded_and_the_sweeper_resends_it(settings, crcr):
    crcr.fail_next(500, times=3)  # every attempt of the first delivery
    run_id = stored_run(settings, results=MIXED_RESULTS)
    reporter = Reporter(settings, fast_report_options())
    reporter.started(run_id, report_context())
    [report] = reports(settings)
    assert report.status == "failed" and "HTTP 500" in report.last_error
    assert crcr.callbacks == []

    result = Sweeper(settings, reporter, submit=lambda _: None).sweep()
    assert result.reports_sent == [report.id]
    [report] = reports(settings)
    assert (report.status, report.attempts, report.last_error) == ("sent", 2, None)
    assert crcr.callbacks[0]["workflow"]["status"] == "in_progress"


def test_a_refused_callback_is_not_resent(settings, crcr):
    crcr.fail_next(400)
    run_id = stored_run(settings, results=MIXED_RESULTS)
    reporter = Reporter(settings, fast_report_options())
    reporter.started(run_id, report_context())
    [report] = reports(settings)
    assert report.status == "rejected" and "HTTP 400" in report.last_error
    assert Sweeper(settings, reporter, submit=lambda _: None).sweep().reports_sent == []
    assert crcr.attempts == 1


def test_late_in_progress_is_never_sent_after_completed(settings, crcr):
    crcr.fail_next(500, times=3)
    run_id = stored_run(settings, results=MIXED_RESULTS)
    reporter, ctx = Reporter(settings, fast_report_options()), report_context()
    reporter.started(run_id, ctx)  # fails
    reporter.finished(run_id, ctx, load_run_facts(settings.resolved_database_url, run_id))
    Sweeper(settings, reporter, submit=lambda _: None).sweep()
    assert [b["workflow"]["status"] for b in crcr.callbacks] == ["completed"]
    assert [r.status for r in reports(settings)] == ["superseded", "sent"]


def test_no_callback_url_means_no_reports(relay_settings):
    run_id = stored_run(relay_settings, results=MIXED_RESULTS)
    Reporter(relay_settings, fast_report_options()).started(run_id, report_context(want_check_run=False))
    assert reports(relay_settings) == []


def test_a_device_broken_on_the_new_torch_is_a_high_confidence_backend_verdict(settings, crcr):
    verdict = "spyre does not build on torch 2.14.1+cu130"
    lines = ["generator.cpp:1:2: error: #error injected", "ninja: build stopped: subcommand failed."]
    run_id = stored_run(settings, results=[("spyre-device/torch-2.14.1+cu130::does_not_build", "error",
                                            "device_broken", verdict)])
    with session_scope(settings.resolved_database_url) as session:  # what the pipeline's summary holds
        from relay.storage import Run

        session.get(Run, run_id).summary = {"device_broken": [{"side": "to", "torch_version": "2.14.1+cu130",
                                                               "status": "does_not_build", "verdict": verdict,
                                                               "lines": lines}]}
    Reporter(settings, fast_report_options()).finished(
        run_id, report_context(), load_run_facts(settings.resolved_database_url, run_id))
    [body] = crcr.callbacks
    workflow = body["workflow"]
    assert workflow["conclusion"] == "failure"
    assert workflow["test_results"] == {"passed": 0, "failed": 1, "skipped": 0, "total": 1}  # one, not hundreds
    assert [d["message"] for d in workflow["failed_tests_detail"]] == [verdict]
    assert workflow["triage_verdict"] == {"category": "backend", "confidence": "high",
                                          "summary": f"{verdict}: {lines[0]}; {lines[1]}"}
