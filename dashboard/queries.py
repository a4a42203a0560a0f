"""Everything the dashboard shows, read from relay.storage in SQL: pages and API share these.

Counts and rates are aggregated in the database and lists are paginated there, so a run
with tens of thousands of results costs one page of rows, not the whole table.
"""
from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

from sqlalchemy import case, distinct, func, or_, select
from sqlalchemy.orm import Session

from dashboard.aggregates import explanation_totals, result_totals
from dashboard.params import PageRequest, page_info
from relay.execution.outcomes import FAILING, Outcome
from relay.redaction import redact
from relay.reporting.report_states import UNSENT, ReportStatus
from relay.reporting.verdicts import NEW_FAILURE
from relay.runs.states import ACTIVE, RunStatus
from relay.storage import EvalRun, Event, Explanation, Report, Run, TestResult
from testdefs.ids import normalise

RUN_STATUSES = tuple(RunStatus)
ACTIVE_STATUSES = tuple(s for s in RunStatus if s in ACTIVE)  # in the order a run goes through them
TRIGGERS = ("cli", "webhook", "crcr", "dashboard")
STAGES = ("diff", "rules", "agent", "verify")
ARTIFACTS = ("selection.json", "explanations.json", "funnel.json", "results.jsonl",
             "testdefs-patch.yaml", "junit.xml")
CHANGED_FILES_SHOWN = 50
RECENT_RUNS_SCANNED = 200
WINDOWS = (("24h", dt.timedelta(hours=24)), ("7d", dt.timedelta(days=7)), ("30d", dt.timedelta(days=30)))


class NotFound(LookupError):
    """An id that names nothing; becomes a 404."""


# ---------------------------------------------------------------- small helpers

def _aware(value: dt.datetime | None) -> dt.datetime | None:
    # SQLite hands back naive datetimes; everything the relay stores is UTC.
    if value is not None and value.tzinfo is None:
        return value.replace(tzinfo=dt.timezone.utc)
    return value


def iso(value: dt.datetime | None) -> str | None:
    value = _aware(value)
    return value.isoformat().replace("+00:00", "Z") if value else None


def _seconds(start: dt.datetime | None, end: dt.datetime | None) -> float | None:
    start, end = _aware(start), _aware(end)
    return round((end - start).total_seconds(), 3) if start and end else None


def pass_rate(counts: dict[str, int]) -> float | None:
    """Share of tests that ran and did not fail: skips do not count, xfails are expected outcomes."""
    ran = sum(n for outcome, n in counts.items() if outcome != Outcome.SKIPPED)
    bad = sum(counts.get(outcome, 0) for outcome in FAILING)
    return round((ran - bad) / ran, 4) if ran else None


def _median(values: list[float]) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else round((values[mid - 1] + values[mid]) / 2, 3)


def event_summary(event: Event | None) -> dict[str, Any] | None:
    """What a reader recognises an upstream change by: PR number and title, or the pushed commit."""
    if event is None:
        return None
    payload = event.payload or {}
    inner = payload.get("client_payload") if isinstance(payload.get("client_payload"), dict) else payload
    pr = inner.get("pull_request") if isinstance(inner.get("pull_request"), dict) else {}
    head = inner.get("head_commit") if isinstance(inner.get("head_commit"), dict) else {}
    title = pr.get("title") or (head.get("message") or "").split("\n", 1)[0] or None
    return {"id": event.id, "source": event.source, "type": event.event_type, "status": event.status,
            "received_at": iso(event.received_at), "pr_number": pr.get("number") or inner.get("number"),
            "title": title, "url": pr.get("html_url") or head.get("url")}


def _run_dict(run: Run, totals: dict[str, Any], event: Event | None) -> dict[str, Any]:
    counts = totals["counts"]
    return {
        "id": run.id, "status": run.status, "trigger": run.trigger, "upstream": run.upstream,
        "from_ref": run.from_ref, "to_ref": run.to_ref, "from_sha": run.from_sha, "to_sha": run.to_sha,
        "created_at": iso(run.created_at), "started_at": iso(run.started_at),
        "finished_at": iso(run.finished_at), "queue_seconds": _seconds(run.created_at, run.started_at),
        "duration_seconds": _seconds(run.started_at, run.finished_at),
        "executor": run.executor, "shards": run.shards, "considered": run.considered,
        "selected": run.selected, "counts": counts, "total": sum(counts.values()),
        "pass_rate": pass_rate(counts), "new_failures": totals["new_failures"], "flaky": totals["flaky"],
        "error": redact(run.error), "event": event_summary(event), "torch": torch_sides(run.torch),
    }


def torch_sides(torch: dict | None) -> dict[str, Any]:
    """Which torch each side ran on and whether spyre built and loaded there (relay/envs)."""
    sides = {}
    for name, side in (torch or {}).items():
        device = side.get("device") or {}
        status = device.get("status", "ok")
        verb = "build" if status == "does_not_build" else "load"
        sides[name] = {"ref": side.get("ref"), "torch_version": side.get("torch_version"),
                       "kind": (side.get("build") or {}).get("kind"), "why": (side.get("build") or {}).get("why"),
                       "device": status, "lines": device.get("lines") or [], "run_id": side.get("run_id"),
                       "verdict": None if status == "ok" else f"spyre does not {verb} on torch {side.get('torch_version')}"}
    return sides


def _events_by_run(session: Session, run_ids: list[str]) -> dict[str, Event]:
    if not run_ids:
        return {}
    events = session.scalars(select(Event).where(Event.run_id.in_(run_ids)).order_by(Event.received_at))
    return {event.run_id: event for event in events}  # the latest event per run wins


def _describe(session: Session, runs: list[Run]) -> list[dict[str, Any]]:
    totals, events = result_totals(session, runs), _events_by_run(session, [run.id for run in runs])
    return [_run_dict(run, totals[run.id], events.get(run.id)) for run in runs]


# ---------------------------------------------------------------- runs

def list_runs(session: Session, page: PageRequest, *, statuses: list[str] = (), triggers: list[str] = (),
              ref: str | None = None, sort: str = "newest") -> dict[str, Any]:
    query = select(Run)
    if statuses:
        query = query.where(Run.status.in_(statuses))
    if triggers:
        query = query.where(Run.trigger.in_(triggers))
    if ref:
        # autoescape: a '%' or '_' typed by the reader is a character, not a wildcard
        query = query.where(or_(Run.from_ref.contains(ref, autoescape=True), Run.to_ref.contains(ref, autoescape=True),
                                Run.to_sha.startswith(ref, autoescape=True), Run.id == ref))
    total = session.scalar(select(func.count()).select_from(query.subquery()))
    if sort == "worst":
        rates = (select(TestResult.run_id.label("run_id"),
                        (func.sum(case((TestResult.outcome.in_(FAILING), 1), else_=0)) * 1.0
                         / func.nullif(func.sum(case((TestResult.outcome != "skipped", 1), else_=0)), 0))
                        .label("fail_share"))
                 .group_by(TestResult.run_id).subquery())
        query = (query.outerjoin(rates, rates.c.run_id == Run.id)
                 .order_by(func.coalesce(rates.c.fail_share, -1).desc(), Run.created_at.desc()))
    else:
        query = query.order_by(Run.created_at.desc(), Run.id)
    runs = list(session.scalars(query.limit(page.per_page).offset(page.offset)))
    return {"items": _describe(session, runs), **page_info(page, total)}


def get_run(session: Session, run_id: str) -> dict[str, Any]:
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"no run with id {run_id!r}")
    detail = _describe(session, [run])[0]
    decided = explanation_totals(session, run)
    detail["funnel"] = funnel(run, decided["decisions"])
    detail["summary"] = {k: v for k, v in (run.summary or {}).items() if k != "totals"}  # shown above
    detail["sim_totals"] = result_totals(session, [run])[run.id]["sim"]
    detail["changed_files"] = decided["changed_files"][:CHANGED_FILES_SHOWN]
    detail["artifacts"] = artifacts(run)
    detail["new_failure_list"] = new_failures(session, run)
    detail["timings"] = time_breakdown(run)
    detail["upstream_links"] = upstream_links(run)
    detail.update(_progress(run))
    detail["reports"] = [{"target": r.target, "status": r.status, "attempts": r.attempts,
                          "last_error": redact(r.last_error), "external_id": r.external_id,
                          "updated_at": iso(r.updated_at)} for r in run.reports]
    return detail


def run_progress(session: Session, run_id: str) -> dict[str, Any]:
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"no run with id {run_id!r}")
    return {"id": run.id, "status": run.status, **_progress(run)}


def _progress(run: Run) -> dict[str, Any]:
    """The latest progress snapshot the pipeline kept, while the run is active."""
    active = run.status in ACTIVE
    return {"active": active, "progress": (run.summary or {}).get("progress") if active else None}


NEW_FAILURES_SHOWN = 20  # in the run page's summary band; the results table has them all


def new_failures(session: Session, run: Run) -> list[dict[str, Any]]:
    """The run's new failures, each with its error line and the command that reproduces it."""
    from relay.execution.runner.process import repro_command

    repro = (run.summary or {}).get("repro")
    rows = session.scalars(select(TestResult).where(TestResult.run_id == run.id, TestResult.verdict == NEW_FAILURE)
                           .order_by(TestResult.test_id).limit(NEW_FAILURES_SHOWN))
    return [{"id": row.id, "test_id": row.test_id, "normalised_id": row.normalised_id, "outcome": row.outcome,
             "message": row.message or row.outcome, "repro": repro_command(repro, row.test_id) if repro else None}
            for row in rows]


def time_breakdown(run: Run) -> dict[str, Any]:
    """Wall time per stage as the pipeline measured it, beside the tests' own time."""
    summary = run.summary or {}
    stages = [{"stage": name, "seconds": float(seconds)} for name, seconds in (summary.get("timings") or {}).items()]
    longest = max((s["seconds"] for s in stages), default=0.0) or 1.0
    for stage in stages:
        stage["share"] = stage["seconds"] / longest
    return {"stages": stages, "tests_seconds": summary.get("tests_seconds"),
            "total": sum(s["seconds"] for s in stages)}


def upstream_links(run: Run) -> dict[str, str]:
    """Commit and compare links when the upstream is on GitHub (a URL or github:OWNER/REPO)."""
    spec = (run.upstream or "").removesuffix(".git")
    if spec.startswith("github:"):
        spec = "https://github.com/" + spec.removeprefix("github:")
    if not spec.startswith("https://github.com/") or not run.to_sha:
        return {}
    links = {"to_commit": f"{spec}/commit/{run.to_sha}"}
    if run.from_sha:
        links["from_commit"] = f"{spec}/commit/{run.from_sha}"
        links["compare"] = f"{spec}/compare/{run.from_sha}...{run.to_sha}"
    return links


def funnel(run: Run, decisions: dict[tuple[str, bool], int]) -> dict[str, Any]:
    """Tests considered, then the tests left after each stage, each stage with the tests it dropped:
    one unit throughout, so considered - every drop = selected. (The selector's own funnel counts
    files, candidates and tests at different stages; it is kept as ``selector`` for reference.)"""
    dropped = {stage: decisions.get((stage, False), 0) for stage in STAGES}
    for (stage, selected), n in decisions.items():
        if not selected and stage not in dropped:
            dropped[stage] = n
    considered = sum(decisions.values()) or run.considered or 0
    left = considered
    stages = [{"stage": "considered", "count": left, "dropped": 0}]
    for name in dropped:
        left -= dropped[name]
        stages.append({"stage": name, "count": left, "dropped": dropped[name]})
    selected_total = sum(n for (_, selected), n in decisions.items() if selected)
    selector = [{"stage": name, "count": int(count)} for name, count in (run.funnel or {}).items()
                if isinstance(count, (int, float))]
    return {"stages": stages, "dropped": dropped, "considered": considered,
            "selected": selected_total if decisions else run.selected or 0, "selector": selector}


def output_dir(run: Run) -> Path | None:
    """The run's artifacts directory, absolute. Runs store it absolute; older rows kept it relative
    to where `relay-cli run` was started, which is not where the dashboard serves files from:
    such a path is tried from the working directory, then as <data dir>/runs/<run id>."""
    if not run.output_dir:
        return None
    stored = Path(run.output_dir)
    if stored.is_absolute():
        return stored
    if stored.resolve().is_dir():
        return stored.resolve()
    from flask import current_app, has_app_context

    settings = current_app.config.get("RELAY_SETTINGS") if has_app_context() else None
    return (Path(settings.data_dir) / "runs" / run.id).resolve() if settings is not None else stored.resolve()


def artifacts(run: Run) -> list[str]:
    base = output_dir(run)
    if base is None:
        return []
    return [name for name in ARTIFACTS if (base / name).is_file()]


def artifact_path(session: Session, run_id: str, name: str) -> Path:
    """Only the documented artifact names, only from the run's own output directory."""
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"no run with id {run_id!r}")
    if name not in artifacts(run):
        raise NotFound(f"run {run_id} has no artifact {name!r}")
    return output_dir(run) / name


def _require_run(session: Session, run_id: str) -> None:
    if session.scalar(select(func.count()).select_from(Run).where(Run.id == run_id)) == 0:
        raise NotFound(f"no run with id {run_id!r}")


def _result_dict(row: TestResult) -> dict[str, Any]:
    return {"id": row.id, "test_id": row.test_id, "normalised_id": row.normalised_id, "file": row.file,
            "outcome": row.outcome, "verdict": row.verdict, "duration": row.duration,
            "attempts": row.attempts, "flaky": row.flaky, "shard": row.shard, "message": row.message,
            "traceback": row.traceback, "sim_stats": row.sim_stats or {}}


def run_results(session: Session, run_id: str, page: PageRequest, *, outcomes: list[str] = (),
                new_failures: bool | None = None, flaky: bool | None = None, file: str | None = None,
                text: str | None = None) -> dict[str, Any]:
    """New failures first, then other failures, then the rest, grouped by file and test id."""
    _require_run(session, run_id)
    query = select(TestResult).where(TestResult.run_id == run_id)
    if outcomes:
        query = query.where(TestResult.outcome.in_(outcomes))
    if new_failures is not None:
        query = query.where((TestResult.verdict == "new_failure") if new_failures
                            else or_(TestResult.verdict.is_(None), TestResult.verdict != "new_failure"))
    if flaky is not None:
        query = query.where(TestResult.flaky.is_(flaky))
    if file:
        query = query.where(TestResult.file == file)
    if text:
        query = query.where(TestResult.test_id.contains(text, autoescape=True))
    total = session.scalar(select(func.count()).select_from(query.subquery()))
    rank = case((TestResult.verdict == NEW_FAILURE, 0), (TestResult.outcome.in_(FAILING), 1),
                (TestResult.flaky.is_(True), 2), else_=3)
    rows = list(session.scalars(query.order_by(rank, TestResult.file, TestResult.test_id)
                                .limit(page.per_page).offset(page.offset)))
    reasons = _reasons(session, run_id, [r.test_id for r in rows])
    troubled = [r.test_id for r in rows if r.outcome in FAILING or r.flaky or r.verdict == NEW_FAILURE]
    history = recent_outcomes(session, troubled)
    items = [{**_result_dict(r), "selection": reasons.get(r.test_id), "recent": history.get(r.test_id)}
             for r in rows]
    return {"items": items, **page_info(page, total)}


def recent_outcomes(session: Session, test_ids: list[str], runs: int = 10) -> dict[str, list[dict[str, Any]]]:
    """The last ``runs`` outcomes of each of these exact test ids, oldest first: the short history
    shown where a failure is read. Only asked for the failing or flaky tests of one page."""
    if not test_ids:
        return {}
    rows = session.execute(
        select(TestResult.test_id, TestResult.run_id, TestResult.outcome, TestResult.flaky, Run.to_ref,
               Run.created_at)
        .join(Run, Run.id == TestResult.run_id)
        # normalised_id is indexed, test_id is not: narrow by the index, then match exactly
        .where(TestResult.normalised_id.in_({normalise(t) for t in test_ids}), TestResult.test_id.in_(test_ids),
               # bounded work however long the history: only the relay's latest runs count as recent
               TestResult.run_id.in_(select(Run.id).order_by(Run.created_at.desc()).limit(RECENT_RUNS_SCANNED))))
    history: dict[str, list] = {}
    for row in rows:
        history.setdefault(row.test_id, []).append(row)
    out = {}
    for test_id, seen in history.items():
        seen.sort(key=lambda r: (_aware(r.created_at), r.run_id))
        out[test_id] = [{"run_id": r.run_id, "outcome": r.outcome, "flaky": r.flaky, "to_ref": r.to_ref,
                         "created_at": iso(r.created_at)} for r in seen[-runs:]]
    return out


def _reasons(session: Session, run_id: str, test_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Why each of a page of tests was selected: one query for the page, not one per row."""
    if not test_ids:
        return {}
    rows = session.scalars(select(Explanation).where(Explanation.run_id == run_id,
                                                     Explanation.test_id.in_(test_ids)))
    return {e.test_id: _explanation_dict(e) for e in rows}


def _explanation_dict(e: Explanation) -> dict[str, Any]:
    return {"test_id": e.test_id, "selected": e.selected, "stage": e.stage, "reason": e.reason, "rule": e.rule,
            "evidence": e.evidence or [], "position": e.position, "shard": e.shard}


def run_files(session: Session, run_id: str) -> list[dict[str, Any]]:
    """Outcome counts per upstream file, files with failures first."""
    run = session.get(Run, run_id)
    if run is None:
        raise NotFound(f"no run with id {run_id!r}")
    files = result_totals(session, [run])[run_id]["files"]
    out = [{"file": name, "counts": counts, "total": sum(counts.values()),
            "failing": sum(counts.get(o, 0) for o in FAILING), "pass_rate": pass_rate(counts)}
           for name, counts in files.items()]
    return sorted(out, key=lambda f: (-f["failing"], f["file"]))


def run_explanations(session: Session, run_id: str, page: PageRequest, *, selected: bool | None = None,
                     stages: list[str] = (), text: str | None = None) -> dict[str, Any]:
    """Every test considered, with the reason it was selected or dropped; selected in run order first."""
    _require_run(session, run_id)
    query = select(Explanation).where(Explanation.run_id == run_id)
    if selected is not None:
        query = query.where(Explanation.selected.is_(selected))
    if stages:
        query = query.where(Explanation.stage.in_(stages))
    if text:
        query = query.where(or_(Explanation.test_id.contains(text, autoescape=True),
                                Explanation.reason.contains(text, autoescape=True)))
    total = session.scalar(select(func.count()).select_from(query.subquery()))
    rows = session.scalars(query.order_by(Explanation.selected.desc(), func.coalesce(Explanation.position, 1 << 30),
                                          Explanation.stage, Explanation.test_id)
                           .limit(page.per_page).offset(page.offset))
    return {"items": [_explanation_dict(e) for e in rows], **page_info(page, total)}


# ---------------------------------------------------------------- test history

def test_history(session: Session, test_id: str, page: PageRequest, timeline_runs: int = 60) -> dict[str, Any]:
    """One normalised test id across runs: every variant's result, a per-run timeline, a flakiness score."""
    normalised = normalise(test_id)
    base = select(TestResult, Run).join(Run, Run.id == TestResult.run_id).where(
        TestResult.normalised_id == normalised)
    stats = session.execute(
        select(func.count(), func.count(distinct(TestResult.run_id)),
               func.sum(case((TestResult.flaky.is_(True), 1), else_=0)))
        .where(TestResult.normalised_id == normalised)).one()
    total, runs_seen, flaky_results = int(stats[0]), int(stats[1]), int(stats[2] or 0)
    if total == 0:
        raise NotFound(f"no results for test {normalised!r}")
    outcome_counts = dict(session.execute(select(TestResult.outcome, func.count())
                                          .where(TestResult.normalised_id == normalised)
                                          .group_by(TestResult.outcome)).all())
    rows = session.execute(base.order_by(Run.created_at.desc(), TestResult.test_id)
                           .limit(page.per_page).offset(page.offset)).all()
    items = [{**_result_dict(r), "run": {"id": run.id, "from_ref": run.from_ref, "to_ref": run.to_ref,
                                         "created_at": iso(run.created_at), "status": run.status}}
             for r, run in rows]
    timeline = _timeline(session, normalised, timeline_runs)
    # A run is unstable when the test needed a re-run to pass there or its verdict flipped from the run before.
    flips = sum(1 for a, b in zip(timeline, timeline[1:]) if a["failing"] != b["failing"])
    unstable = sum(1 for i, point in enumerate(timeline)
                   if point["flaky"] or (i and point["failing"] != timeline[i - 1]["failing"]))
    return {
        "test_id": test_id, "normalised_id": normalised, "results": total, "runs": runs_seen,
        "outcomes": outcome_counts, "pass_rate": pass_rate(outcome_counts), "flaky_results": flaky_results,
        "flaky_rate": round(flaky_results / total, 4),
        "flakiness": round(unstable / len(timeline), 4) if timeline else 0.0,
        "flips": flips, "timeline": timeline, "variants": sorted({i["test_id"] for i in items}),
        "items": items, **page_info(page, total),
    }


def _timeline(session: Session, normalised: str, limit: int) -> list[dict[str, Any]]:
    """The worst outcome per run over the latest ``limit`` runs that ran this test, oldest first."""
    recent = (select(Run.id, Run.created_at, Run.to_ref).join(TestResult, TestResult.run_id == Run.id)
              .where(TestResult.normalised_id == normalised).group_by(Run.id, Run.created_at, Run.to_ref)
              .order_by(Run.created_at.desc()).limit(limit).subquery())
    rows = session.execute(select(recent.c.id, recent.c.created_at, recent.c.to_ref, TestResult.outcome,
                                  TestResult.flaky)
                           .join(TestResult, TestResult.run_id == recent.c.id)
                           .where(TestResult.normalised_id == normalised)
                           .order_by(recent.c.created_at, recent.c.id))
    points: dict[str, dict[str, Any]] = {}
    for run_id, created, to_ref, outcome, flaky in rows:
        point = points.setdefault(run_id, {"run_id": run_id, "created_at": iso(created), "to_ref": to_ref,
                                           "outcome": outcome, "flaky": False})
        point["outcome"] = worst_outcome({point["outcome"]: 1, outcome: 1})
        point["flaky"] = point["flaky"] or bool(flaky)
    for point in points.values():
        point["failing"] = point["outcome"] in FAILING
    return list(points.values())


# ---------------------------------------------------------------- health

def _outcomes_per_run(session: Session, run_ids) -> dict[str, Counter[str]]:
    """Outcome counts per run for a subquery of run ids, from the (run_id, outcome) index alone."""
    per_run: dict[str, Counter[str]] = {}
    for run_id, outcome, n in session.execute(
            select(TestResult.run_id, TestResult.outcome, func.count())
            .where(TestResult.run_id.in_(run_ids)).group_by(TestResult.run_id, TestResult.outcome)):
        per_run.setdefault(run_id, Counter())[outcome] += n
    return per_run


# Errors that were the user's mistake (a mistyped ref, broken rules), as older relays stored them
# as runs ("<exception class>: <message>"); relays now refuse them before recording a run.
USAGE_ERRORS = ("UserError", "UpstreamError", "RulesError")


def _usage_error():
    """Runs that only ever were a usage error: they say nothing about upstream or the device."""
    return (Run.status == RunStatus.ERROR) & or_(*(Run.error.startswith(f"{name}: ", autoescape=True)
                                                   for name in USAGE_ERRORS))


def window_health(session: Session, now: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Queue time, execution time, timeouts and pass rate over 24 h / 7 d / 30 d, worst pass rate first
    (runs that were only a usage error do not count).

    Two queries for all three windows: the runs of the longest window, and their outcome counts
    grouped per run (answered from the (run_id, outcome) index alone)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    since = now - max(span for _, span in WINDOWS)
    counted = (Run.created_at >= since) & ~_usage_error()
    recent = select(Run.id).where(counted)
    runs = session.execute(select(Run.id, Run.status, Run.created_at, Run.started_at, Run.finished_at)
                           .where(counted)).all()
    per_run = _outcomes_per_run(session, recent)
    out = []
    for label, span in WINDOWS:
        inside = [r for r in runs if _aware(r.created_at) >= now - span]
        counts: Counter[str] = Counter()
        for r in inside:
            counts.update(per_run.get(r.id, {}))
        out.append({
            "window": label, "runs": len(inside),
            "failed_runs": sum(1 for r in inside if r.status in (RunStatus.FAILED, RunStatus.ERROR)),
            "queue_seconds_median": _median([_seconds(r.created_at, r.started_at) for r in inside]),
            "duration_seconds_median": _median([_seconds(r.started_at, r.finished_at) for r in inside]),
            "timeouts": counts.get(Outcome.TIMED_OUT, 0), "results": sum(counts.values()),
            "pass_rate": pass_rate(dict(counts)),
        })
    return sorted(out, key=lambda w: (w["pass_rate"] is None, w["pass_rate"] if w["pass_rate"] is not None else 0))


def database_unreachable(exc) -> dict[str, Any]:
    """The health answer when the database is gone: its first error line, credentials masked."""
    return {"database": {"reachable": False, "error": redact(str(exc.orig).strip().splitlines()[0])}}


def health(session: Session) -> dict[str, Any]:
    """Whether the relay is keeping up: active runs, undelivered reports, the last event seen."""
    session.execute(select(1))  # raises when the database is gone; the caller reports it
    active = dict(session.execute(select(Run.status, func.count()).where(Run.status.in_(ACTIVE_STATUSES))
                                  .group_by(Run.status)).all())
    oldest_queued = session.scalar(select(func.min(Run.created_at)).where(Run.status == RunStatus.QUEUED))
    reports = dict(session.execute(select(Report.status, func.count()).group_by(Report.status)).all())
    troubled = session.scalars(select(Report).where(Report.status.in_(UNSENT))
                               .order_by(Report.updated_at.desc()).limit(20))
    last_event = session.scalars(select(Event).order_by(Event.received_at.desc()).limit(1)).first()
    last_run = session.scalars(select(Run).where(Run.finished_at.is_not(None))
                               .order_by(Run.finished_at.desc()).limit(1)).first()
    now = dt.datetime.now(dt.timezone.utc)
    return {
        "database": {"reachable": True, "dialect": session.get_bind().dialect.name},
        "runs": {"active": {s: active.get(s, 0) for s in ACTIVE_STATUSES},
                 "oldest_queued_seconds": _seconds(oldest_queued, now) if oldest_queued else None,
                 "last_finished": ({"id": last_run.id, "status": last_run.status,
                                    "finished_at": iso(last_run.finished_at)} if last_run else None)},
        "reports": {"counts": {s: reports.get(s, 0) for s in (ReportStatus.PENDING, ReportStatus.SENT, ReportStatus.FAILED)},
                    "attention": [{"id": r.id, "run_id": r.run_id, "target": r.target, "status": r.status,
                                   "attempts": r.attempts, "last_error": redact(r.last_error),
                                   "updated_at": iso(r.updated_at)} for r in troubled]},
        "last_event": event_summary(last_event),
        "windows": window_health(session, now),
    }


# ---------------------------------------------------------------- matrix and trends

def matrix(session: Session, *, runs: int = 12, ref: str | None = None) -> dict[str, Any]:
    """The latest finished runs (columns, oldest left) x upstream test files (rows), worst outcome per cell."""
    query = select(Run).where(Run.finished_at.is_not(None))
    if ref:
        query = query.where(or_(Run.from_ref.contains(ref, autoescape=True), Run.to_ref.contains(ref, autoescape=True)))
    columns = list(reversed(list(session.scalars(query.order_by(Run.created_at.desc()).limit(runs)))))
    totals = result_totals(session, columns)
    events = _events_by_run(session, [run.id for run in columns])
    files = sorted({name for run in columns for name in totals[run.id]["files"]})
    rows = []
    for name in files:
        cells = []
        for run in columns:
            counts = totals[run.id]["files"].get(name)
            cells.append(None if counts is None else {
                "run_id": run.id, "counts": counts, "worst": worst_outcome(counts),
                "failing": sum(counts.get(o, 0) for o in FAILING), "pass_rate": pass_rate(counts)})
        rows.append({"file": name, "cells": cells,
                     "failing_runs": sum(1 for c in cells if c and c["failing"])})
    rows.sort(key=lambda r: (-r["failing_runs"], r["file"]))
    return {"runs": [{"id": run.id, "from_ref": run.from_ref, "to_ref": run.to_ref, "status": run.status,
                      "created_at": iso(run.created_at), "event": event_summary(events.get(run.id))}
                     for run in columns],
            "files": rows}


SEVERITY = (Outcome.PASSED, Outcome.XFAILED, Outcome.SKIPPED, Outcome.XPASSED, Outcome.FAILED, Outcome.ERROR,
            Outcome.CRASHED, Outcome.TIMED_OUT)


def worst_outcome(counts: dict[str, int]) -> str | None:
    present = [o for o, n in counts.items() if n]
    return max(present, key=lambda o: SEVERITY.index(o) if o in SEVERITY else 0) if present else None


def trends(session: Session, *, days: int = 30, now: dt.datetime | None = None) -> dict[str, Any]:
    """Per day: runs, results, pass rate, and the share of considered tests the selector kept."""
    now = now or dt.datetime.now(dt.timezone.utc)
    since = (now - dt.timedelta(days=days - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    runs = session.execute(select(Run.id, Run.created_at, Run.considered, Run.selected)
                           .where(Run.created_at >= since)).all()
    per_run = _outcomes_per_run(session, select(Run.id).where(Run.created_at >= since))
    by_day: dict[str, dict[str, Any]] = {}
    for run in runs:
        day = _aware(run.created_at).date().isoformat()
        point = by_day.setdefault(day, {"day": day, "runs": 0, "counts": Counter(), "considered": 0, "selected": 0})
        point["runs"] += 1
        point["counts"].update(per_run.get(run.id, {}))
        point["considered"] += run.considered or 0
        point["selected"] += run.selected or 0
    points = []
    for day in sorted(by_day):
        point = by_day[day]
        counts = dict(point.pop("counts"))
        points.append({**point, "counts": counts, "results": sum(counts.values()), "pass_rate": pass_rate(counts),
                       "failing": sum(counts.get(o, 0) for o in FAILING),
                       "selected_fraction": round(point["selected"] / point["considered"], 4)
                       if point["considered"] else None})
    evals = session.scalars(select(EvalRun).where(EvalRun.created_at >= since).order_by(EvalRun.created_at)).all()
    return {"days": days, "since": iso(since), "points": points, "evals": [_eval_dict(e) for e in evals]}


def _eval_dict(row: EvalRun) -> dict[str, Any]:
    """One `relay-cli eval` replay: the selector's recall, selected share and ordering on that change."""
    return {"id": row.id, "created_at": iso(row.created_at), "from_ref": row.from_ref, "to_ref": row.to_ref,
            "agent": row.agent, "regressions": row.regressions, "test_recall": row.test_recall,
            "cause_recall": row.cause_recall, "fraction_by_count": row.fraction_by_count,
            "fraction_by_duration": row.fraction_by_duration, "apfdc": row.apfdc,
            "selector_seconds": row.selector_seconds}
