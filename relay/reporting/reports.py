"""Reports about a run, each a stored ``Report`` row sent (and, when it fails, resent later).

A row holds everything needed to send it again, so the sweeper can retry it after a restart.
Status (``relay.reporting.report_states``): pending -> sent | failed (worth retrying) | rejected (the
receiver refused it for good) | superseded (an in_progress report not sent before its run's
completion was: never sent late).
"""
from __future__ import annotations

import datetime as dt
import logging
from dataclasses import asdict, dataclass

from relay.config import Settings
from relay.reporting.crcr_callback import (
    Callback,
    CallbackFailed,
    CallbackRejected,
    CrcrClient,
    FailedTest,
    TestCounts,
    TriageVerdict,
    Workflow,
)
from relay.reporting.github_checks import CheckRunFailed, CheckRuns
from relay.reporting.report_states import ReportStatus
from relay.reporting.run_facts import RunFacts, dashboard_link, markdown_summary, title
from relay.runs.states import RunStatus
from relay.storage import Report, session_scope

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReportContext:
    """Where a run's results go: taken from the event that started it."""

    event_type: str  # the upstream event type (CRCR's envelope event_type)
    delivery_id: str  # correlation key for CRCR
    payload: dict  # the upstream webhook body, echoed to CRCR
    repository: str
    head_sha: str
    check_name: str
    want_check_run: bool


@dataclass
class ReportOptions:
    """Client tuning; tests shorten the backoff and switch off PyGithub's write pacing."""

    crcr_attempts: int = 4
    crcr_backoff: float = 1.0
    github_retries: int = 3
    github_throttle: bool = True
    max_attempts: int = 10  # sweeper gives up on a report after this many


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


class Reporter:
    def __init__(self, settings: Settings, options: ReportOptions | None = None) -> None:
        self.settings = settings
        self.options = options or ReportOptions()
        self.db_url = settings.resolved_database_url

    # --- creating reports -------------------------------------------------------------------
    def started(self, run_id: str, ctx: ReportContext) -> None:
        link = dashboard_link(self.settings.dashboard_url, run_id)
        reports = []
        if self.settings.crcr_callback_url:
            workflow = Workflow(status="in_progress", name=ctx.check_name, job_name=ctx.check_name, run_id=run_id,
                                url=link, started_at=_now())
            reports.append(("crcr", {"phase": "start", "body": self._callback(ctx, workflow)}))
        if self._checks_enabled(ctx):
            reports.append(("github_check", {"phase": "start", "context": asdict(ctx) | {"payload": {}},
                                             "details_url": link}))
        self._send_new(run_id, reports)

    def finished(self, run_id: str, ctx: ReportContext, facts: RunFacts) -> None:
        link = dashboard_link(self.settings.dashboard_url, run_id)
        reports = []
        if self.settings.crcr_callback_url:
            workflow = Workflow(
                status="completed", conclusion=facts.conclusion, name=ctx.check_name, job_name=ctx.check_name,
                run_id=run_id, url=link, artifact_url=link, started_at=facts.started_at,
                completed_at=facts.finished_at or _now(),
                test_results=TestCounts(passed=facts.passed, failed=facts.failed, skipped=facts.skipped,
                                        total=facts.total),
                failed_tests_detail=[FailedTest(name=f.test_id, message=f.message, stacktrace=f.traceback,
                                                new_failure=f.new) for f in facts.failures],
                triage_verdict=_verdict(facts))
            reports.append(("crcr", {"phase": "complete", "body": self._callback(ctx, workflow)}))
        if self._checks_enabled(ctx):
            reports.append(("github_check", {
                "phase": "complete", "context": asdict(ctx) | {"payload": {}}, "details_url": link,
                "conclusion": facts.conclusion, "title": title(facts), "summary": markdown_summary(facts, link)}))
        self._send_new(run_id, reports)

    def _checks_enabled(self, ctx: ReportContext) -> bool:
        return bool(self.settings.github_token) and ctx.want_check_run and bool(ctx.head_sha)

    @staticmethod
    def _callback(ctx: ReportContext, workflow: Workflow) -> dict:
        return Callback(event_type=ctx.event_type, delivery_id=ctx.delivery_id, payload=ctx.payload,
                        workflow=workflow).model_dump(mode="json", exclude_none=True)

    def _send_new(self, run_id: str, reports: list[tuple[str, dict]]) -> None:
        """Record and send each report, once per (target, phase) and run: a relay that takes over a run
        from one that died does not announce its start or completion again (the sweeper retries those)."""
        ids = []
        with session_scope(self.db_url) as session:
            recorded = {(r.target, r.payload.get("phase")) for r in session.query(Report).filter_by(run_id=run_id)}
            for target, payload in reports:
                if (target, payload["phase"]) in recorded:
                    continue
                report = Report(run_id=run_id, target=target, payload=payload)
                session.add(report)
                session.flush()
                ids.append(report.id)
        for report_id in ids:
            self.deliver(report_id)

    # --- sending ----------------------------------------------------------------------------
    def deliver(self, report_id: int) -> ReportStatus:
        """Send one report, record the attempt; returns the new status. Never raises for a send failure."""
        with session_scope(self.db_url) as session:
            report = session.get(Report, report_id)
            target, payload, run_id = report.target, dict(report.payload), report.run_id
        if payload.get("phase") == "start" and self._completion_sent(run_id, target):
            # A late in_progress would move the check (or CRCR's state machine) backwards.
            status, error, external_id = ReportStatus.SUPERSEDED, None, None
        else:
            status, error, external_id = self._attempt(target, run_id, payload)
        with session_scope(self.db_url) as session:
            report = session.get(Report, report_id)
            report.attempts += 1
            report.status = status
            report.last_error = error
            if external_id:
                report.external_id = external_id
        if error:
            log.warning("report %s (%s, run %s) %s: %s", report_id, target, run_id, status, error)
        return status

    def _attempt(self, target: str, run_id: str, payload: dict) -> tuple[ReportStatus, str | None, str | None]:
        """(status, error, external id) of one send."""
        try:
            if target == "crcr":
                self._crcr().send(payload["body"])
                return ReportStatus.SENT, None, None
            return ReportStatus.SENT, None, str(self._send_check(run_id, payload))
        except CheckRunFailed as exc:
            return (ReportStatus.FAILED if exc.retryable else ReportStatus.REJECTED), str(exc), None
        except CallbackFailed as exc:
            return ReportStatus.FAILED, str(exc), None
        except CallbackRejected as exc:
            return ReportStatus.REJECTED, str(exc), None

    def _completion_sent(self, run_id: str, target: str) -> bool:
        with session_scope(self.db_url) as session:
            return any(r.payload.get("phase") == "complete"
                       for r in session.query(Report).filter_by(run_id=run_id, target=target, status=ReportStatus.SENT))

    def _crcr(self) -> CrcrClient:
        return CrcrClient(self.settings.crcr_callback_url, token=self.settings.crcr_callback_token,
                          attempts=self.options.crcr_attempts,
                          backoff=self.options.crcr_backoff)

    def _send_check(self, run_id: str, payload: dict) -> int:
        ctx = payload["context"]
        checks = CheckRuns(self.settings.github_token, self.settings.github_api_url,
                           retries=self.options.github_retries, throttle=self.options.github_throttle)
        common = dict(name=ctx["check_name"], head_sha=ctx["head_sha"], details_url=payload.get("details_url"),
                      external_id=run_id)
        if payload["phase"] == "start":
            return checks.start(ctx["repository"], **common)
        return checks.complete(ctx["repository"], check_id=self._started_check_id(run_id), **common,
                               conclusion=payload["conclusion"], title=payload["title"], summary=payload["summary"])

    def _started_check_id(self, run_id: str) -> int | None:
        with session_scope(self.db_url) as session:
            for report in session.query(Report).filter_by(run_id=run_id, target="github_check", status=ReportStatus.SENT):
                if report.payload.get("phase") == "start" and report.external_id:
                    return int(report.external_id)
        return None


def _verdict(facts: RunFacts) -> TriageVerdict | None:
    if facts.status == RunStatus.ERROR:
        return TriageVerdict(category="infra", confidence="medium",
                             summary=f"the run did not complete: {(facts.error or 'unknown error')[:900]}")
    broken = [b for b in facts.device_broken if b["side"] == "to"]
    if broken:  # the upgrade breaks the backend itself: no test result says more than this
        key = "; ".join(broken[0]["lines"][:3])
        return TriageVerdict(category="backend", confidence="high",
                             summary=f"{broken[0]['verdict']}: {key}"[:1000])
    if facts.new_failures:
        return TriageVerdict(category="upstream", confidence="medium",
                             summary=f"{len(facts.new_failures)} test(s) that the rules expect to pass fail on "
                                     f"spyre after the upstream change")
    return None
