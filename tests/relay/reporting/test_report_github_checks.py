"""GitHub check runs through PyGithub, its base_url pointed at a local server speaking GitHub's REST API."""
from __future__ import annotations

import pytest

from relay.reporting.reports import Reporter
from relay.reporting.run_facts import load_run_facts
from relay.runs.sweeper import Sweeper
from relay.storage import Report, session_scope
from tests.relay.intake.webhook_helpers import (
    MIXED_RESULTS,
    UPSTREAM,
    GitHubStandIn,
    fast_report_options,
    report_context,
    stored_run,
)


@pytest.fixture
def github():
    with GitHubStandIn() as stand_in:
        yield stand_in


@pytest.fixture
def settings(relay_settings, github):
    return relay_settings.model_copy(update={"github_token": "ghs_test_token", "github_api_url": github.url,
                                             "dashboard_url": "http://dash.example"})


def finish(settings, run_id, ctx, reporter=None):
    reporter = reporter or Reporter(settings, fast_report_options())
    reporter.finished(run_id, ctx, load_run_facts(settings.resolved_database_url, run_id))


def test_check_run_created_in_progress_then_completed_with_summary(settings, github):
    run_id = stored_run(settings, results=MIXED_RESULTS)
    reporter, ctx = Reporter(settings, fast_report_options()), report_context()
    reporter.started(run_id, ctx)
    [check] = github.check_runs.values()
    assert (check["status"], check["name"], check["head_sha"]) == ("in_progress", "spyre/upstream", "c" * 40)
    assert check["repository"] == UPSTREAM
    assert check["external_id"] == run_id
    assert check["details_url"] == f"http://dash.example/runs/{run_id}"

    finish(settings, run_id, ctx, reporter)
    [check] = github.check_runs.values()  # the same check, completed
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert check["output"]["title"] == "1 new failure(s) on spyre"
    summary = check["output"]["summary"]
    assert "`test/test_ops.py::TestCommonPRIVATEUSE1::test_mul_spyre_float16`" in summary
    assert "test_div_spyre_float16" not in summary  # a known failure is not news
    assert "40 tests considered, 4 selected" in summary
    assert f"http://dash.example/runs/{run_id}" in summary
    assert {auth for _, _, auth in github.requests} == {"token ghs_test_token"}


def test_label_mode_needs_the_trigger_label(settings, github):
    run_id = stored_run(settings, status="passed", results=MIXED_RESULTS[:1])
    finish(settings, run_id, report_context(want_check_run=False))
    assert github.check_runs == {}
    finish(settings, run_id, report_context(want_check_run=True))
    [check] = github.check_runs.values()
    assert (check["status"], check["conclusion"]) == ("completed", "success")


def test_untrusted_test_ids_cannot_break_out_of_the_summary_markup(settings, github):
    hostile = "test/x.py::T::test_`](http://evil.example)`\n# heading"
    run_id = stored_run(settings, results=[(hostile, "failed", "new_failure", "boom")])
    finish(settings, run_id, report_context())
    summary = next(iter(github.check_runs.values()))["output"]["summary"]
    assert "`test/x.py::T::test_'](http://evil.example)' # heading`" in summary
    assert "\n# heading" not in summary


def test_github_outage_is_recorded_and_completion_still_lands(settings, github):
    github.fail_next(502, times=2)  # both tries of the start (PyGithub retries once here)
    run_id = stored_run(settings, results=MIXED_RESULTS)
    reporter, ctx = Reporter(settings, fast_report_options()), report_context()
    reporter.started(run_id, ctx)
    assert github.check_runs == {}
    with session_scope(settings.resolved_database_url) as session:
        [start] = session.query(Report).all()
        assert start.status == "failed" and "502" in start.last_error

    finish(settings, run_id, ctx, reporter)  # no started check: created completed in one call
    Sweeper(settings, reporter, submit=lambda _: None).sweep()
    [check] = github.check_runs.values()
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    with session_scope(settings.resolved_database_url) as session:
        assert [r.status for r in session.query(Report).order_by(Report.id)] == ["superseded", "sent"]


def test_invalid_request_is_rejected_not_retried(settings, github):
    github.fail_next(422)
    run_id = stored_run(settings, results=MIXED_RESULTS)
    Reporter(settings, fast_report_options()).started(run_id, report_context())
    with session_scope(settings.resolved_database_url) as session:
        [report] = session.query(Report).all()
        assert report.status == "rejected" and "422" in report.last_error
