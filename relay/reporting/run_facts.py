"""What a finished run says, in the terms reports use: counts, failures, conclusion, summary."""
from __future__ import annotations

from dataclasses import dataclass, field

from relay.execution.outcomes import FAILED_IN_REPORTS, PASSING, Outcome
from relay.reporting.verdicts import NEW_FAILURE
from relay.runs.states import RunStatus
from relay.storage import Run, TestResult, session_scope

CONCLUSIONS = {RunStatus.PASSED: "success", RunStatus.FAILED: "failure", RunStatus.ERROR: "failure",
               RunStatus.CANCELLED: "cancelled", RunStatus.TIMED_OUT: "timed_out"}
SUMMARY_LIST_LIMIT = 50  # failures listed in a check run summary; the dashboard has the rest


@dataclass
class Failure:
    test_id: str
    message: str
    traceback: str
    new: bool


@dataclass
class RunFacts:
    run_id: str
    status: str
    from_ref: str
    to_ref: str
    considered: int
    selected: int
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    failures: list[Failure] = field(default_factory=list)
    error: str | None = None
    started_at: str | None = None
    finished_at: str | None = None
    torch: dict[str, str] = field(default_factory=dict)  # side -> which torch it ran on, in words
    device_broken: list[dict] = field(default_factory=list)  # sides whose spyre did not build or load

    @property
    def total(self) -> int:
        return self.passed + self.failed + self.skipped

    @property
    def new_failures(self) -> list[Failure]:
        return [f for f in self.failures if f.new]

    @property
    def conclusion(self) -> str:
        return CONCLUSIONS.get(self.status, "neutral")


def load_run_facts(db_url: str, run_id: str, new_failure_ids: set[str] = frozenset()) -> RunFacts:
    with session_scope(db_url) as session:
        run = session.get(Run, run_id)
        facts = RunFacts(run_id=run.id, status=run.status, from_ref=run.from_ref, to_ref=run.to_ref,
                         considered=run.considered, selected=run.selected, error=run.error,
                         started_at=run.started_at.isoformat() if run.started_at else None,
                         finished_at=run.finished_at.isoformat() if run.finished_at else None,
                         torch={k: v for k, v in ((run.summary or {}).get("torch") or {}).items() if v},
                         device_broken=list((run.summary or {}).get("device_broken") or []))
        results = session.query(TestResult).filter_by(run_id=run_id).order_by(TestResult.test_id).all()
        for result in results:
            if result.outcome in PASSING:
                facts.passed += 1
            elif result.outcome == Outcome.SKIPPED:
                facts.skipped += 1
            elif result.outcome in FAILED_IN_REPORTS:
                facts.failed += 1
                new = result.verdict == NEW_FAILURE or result.test_id in new_failure_ids
                facts.failures.append(Failure(result.test_id, result.message or "", result.traceback or "", new))
    return facts


def dashboard_link(dashboard_url: str | None, run_id: str) -> str | None:
    return f"{dashboard_url.rstrip('/')}/runs/{run_id}" if dashboard_url else None


def title(facts: RunFacts) -> str:
    if facts.status == RunStatus.ERROR:
        return "the run could not complete"
    broken = [b for b in facts.device_broken if b["side"] == "to"]
    if broken:
        return broken[0]["verdict"]
    if facts.new_failures:
        return f"{len(facts.new_failures)} new failure(s) on spyre"
    return f"no new failures ({facts.passed} passed, {facts.failed} known failures)"


def _code(text: str) -> str:
    """Inline code that untrusted text cannot break out of."""
    return "`" + text.replace("`", "'").replace("\n", " ") + "`"


def markdown_summary(facts: RunFacts, link: str | None) -> str:
    """Funnel and failures for a check run; test ids are code-quoted so no payload text renders as markup."""
    lines = [f"Upstream `{facts.from_ref[:12]}` → `{facts.to_ref[:12]}`: {facts.considered} tests considered, "
             f"{facts.selected} selected, {facts.total} run: {facts.passed} passed, {facts.failed} failed, "
             f"{facts.skipped} skipped."]
    if facts.torch:
        lines += [""] + [f"- torch {_code(text)}" for text in facts.torch.values()]
    for broken in facts.device_broken:
        lines += ["", f"**{broken['side']} side: {broken['verdict']}**"]
        lines += [f"    {line}" for line in broken["lines"]]
    if facts.error:
        lines += ["", f"Run error: {_code(facts.error[:500])}"]
    if facts.new_failures:
        lines += ["", "New failures:"]
        lines += [f"- {_code(f.test_id)}" for f in facts.new_failures[:SUMMARY_LIST_LIMIT]]
        if len(facts.new_failures) > SUMMARY_LIST_LIMIT:
            lines.append(f"- … and {len(facts.new_failures) - SUMMARY_LIST_LIMIT} more")
    if link:
        lines += ["", f"Details: {link}"]
    return "\n".join(lines)
