"""The whole job for one upstream change: select, execute, store, judge, write artifacts.

``run_change`` does it in one call (the CLI); ``create_run`` records a queued run and
``execute_run`` runs it later (the webhook receiver). Progress is reported as
``progress(stage, message, done, total)``, the selector's convention.
"""
from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import delete, func, select

from relay.config import Settings
from relay.envs import INSTALLED, DeviceStatus
from relay.envs.device_build import BACKEND
from relay.envs.sides import Side, describe, device_test_id, is_device_record, is_version_true, plan_sides
from relay.errors import UserError
from relay.execution import Executor, ShardJob, make_executor
from relay.execution.outcomes import FAILING, Outcome
from relay.execution.runner import TestRecord
from relay.execution.runner.process import repro_prefix
from relay.execution.runner.records import drift_key
from relay.execution.runner.warm import Prewarmed
from relay.redaction import redact
from relay.reporting.artifacts import write_junit, write_results_jsonl
from relay.reporting.patch import Judged, build_patch, dump_patch
from relay.reporting.verdicts import DEVICE_BROKEN, FIXED, NEW_FAILURE, verdict
from relay.runs import machine
from relay.runs.machine import is_cancelled
from relay.runs.states import COMPLETED, EXECUTING, RESUMABLE, RunStatus
from relay.storage import Event, Explanation, Run, TestResult, init_db, session_scope
from relay.storage.results import load_records, store_shard
from relay.storage.totals import run_totals
from testdefs import version_from_ref
from testdefs.ids import normalise

Progress = Callable[[str, str, "int | None", "int | None"], None]
HISTORY_RUNS = 5  # earlier runs whose results inform the selector's ordering and durations
INTERRUPTED = "interrupted by the user (Ctrl-C)"
PROGRESS_EVERY = 1.0  # seconds between progress snapshots kept for the dashboard's live view


@dataclass
class RunOutcome:
    run_id: str
    status: RunStatus  # passed | failed (new failures) | error | cancelled | timed_out
    new_failures: list[str]
    output_dir: Path | None
    summary: dict = field(default_factory=dict)
    error: str | None = None  # why the run errored or was cancelled


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: the run is cancelled, with the results and artifacts it has."""

    def __init__(self, outcome: RunOutcome) -> None:
        super().__init__(outcome.run_id)
        self.outcome = outcome


class StageClock:
    """Wall time per stage, told apart by the progress reports: a stage lasts from its first
    report to the first report of the next one. Kept in ``runs.summary["timings"]``."""

    def __init__(self, progress: Progress, keep: Callable[[dict], None] | None = None) -> None:
        self.progress, self.seconds, self.keep = progress, {}, keep
        self.stage: str | None = None
        self.since = self.started = time.perf_counter()
        self.kept_at = 0.0
        self.lock = threading.Lock()  # shards report from their own threads

    def __call__(self, stage: str, message: str, done: int | None, total: int | None) -> None:
        with self.lock:
            changed = stage != self.stage and stage not in self.seconds
            if changed:
                self.stop()
                self.stage, self.since = stage, time.perf_counter()
            now = time.perf_counter()
            keep = self.keep is not None and (changed or now - self.kept_at >= PROGRESS_EVERY or done == total)
            if keep:
                self.kept_at = now
        if keep:  # outside the lock: a database write
            self.keep({"stage": stage, "message": message[:300], "done": done, "total": total,
                       "elapsed": round(now - self.started, 1), "timings": dict(self.seconds)})
        self.progress(stage, message, done, total)

    def stop(self) -> dict[str, float]:
        if self.stage is not None:
            self.seconds[self.stage] = round(time.perf_counter() - self.since, 3)
            self.stage = None
        return self.seconds


def run_change(settings: Settings, *, upstream: str | None, from_ref: str, to_ref: str, trigger: str = "cli",
               event_id: str | None = None, rules=None, budget: str | None = None, shards: int | None = None,
               executor: str | None = None, output_dir: Path | None = None,
               progress: Progress | None = None, torch_from: str | None = None,
               torch_to: str | None = None) -> RunOutcome:
    run_id = create_run(settings, upstream=upstream, from_ref=from_ref, to_ref=to_ref, trigger=trigger,
                        event_id=event_id, rules=rules, budget=budget, shards=shards, executor=executor,
                        output_dir=output_dir, torch_from=torch_from, torch_to=torch_to)
    try:
        return execute_run(settings, run_id, progress=progress)
    except UserError:  # a mistyped ref or broken rules: one line for the user, no run in the history
        _forget_unstarted_run(settings.resolved_database_url, run_id)
        raise


def _forget_unstarted_run(url: str, run_id: str) -> None:
    """Delete a run that stopped on the user's mistake before any test ran (results are never lost)."""
    with session_scope(url) as session:
        if session.scalar(select(TestResult.id).where(TestResult.run_id == run_id).limit(1)) is not None:
            return
        session.execute(delete(Explanation).where(Explanation.run_id == run_id))
        session.execute(delete(Run).where(Run.id == run_id))


def create_run(settings: Settings, *, upstream: str | None, from_ref: str, to_ref: str, trigger: str = "cli",
               event_id: str | None = None, rules=None, budget: str | None = None, shards: int | None = None,
               executor: str | None = None, output_dir: Path | None = None, torch_from: str | None = None,
               torch_to: str | None = None) -> str:
    """Record a queued run; what ``execute_run`` needs later rides in ``summary['request']``.

    ``torch_from``/``torch_to`` name each side's torch (a version, wheel file or URL; relay.envs);
    unset, the settings' values apply, then the refs decide."""
    upstream = upstream or settings.upstream
    if not upstream:
        raise UserError("no upstream given", hint="pass --upstream PATH|URL or set RELAY_UPSTREAM")
    shards = shards or settings.shards
    if shards < 1:
        raise UserError(f"--shards must be at least 1, got {shards}")
    rule_paths = _rule_paths(rules if rules is not None else settings.rules)
    url = settings.resolved_database_url
    init_db(url)
    with session_scope(url) as session:
        run = Run(status=RunStatus.QUEUED, trigger=trigger, upstream=str(upstream), from_ref=from_ref, to_ref=to_ref,
                  executor=executor or settings.executor, shards=shards,
                  summary={"request": {"rules": rule_paths, "budget": budget or settings.budget,
                                       "output_dir": str(output_dir) if output_dir else None,
                                       "torch": {"from": torch_from or settings.torch_from,
                                                 "to": torch_to or settings.torch_to}}})
        session.add(run)
        session.flush()
        if event_id and (event := session.get(Event, event_id)) is not None:
            event.run_id = run.id
        return run.id


def _rule_paths(rules) -> list[str]:
    if rules is None:
        return []
    paths = [rules] if isinstance(rules, (str, Path)) else list(rules)
    for path in paths:
        if not Path(path).exists():
            raise UserError(f"rules path {path} does not exist", hint="pass --rules FILE_OR_DIR")
    return [str(Path(p).resolve()) for p in paths]


def execute_run(settings: Settings, run_id: str, *, progress: Progress | None = None,
                executor: Executor | None = None) -> RunOutcome:
    """Run a recorded run to the end. A finished run is returned as is; an interrupted one resumes
    (shards already stored are not run again)."""
    url = settings.resolved_database_url
    init_db(url)
    with session_scope(url) as session:
        run = session.get(Run, run_id)
        if run is None:
            raise UserError(f"run {run_id} does not exist")
        if run.status not in RESUMABLE:
            return _outcome(run)
    try:
        return _execute(settings, run_id, StageClock(progress or _quiet, _progress_keeper(url, run_id)), executor)
    except RunInterrupted:
        raise
    except KeyboardInterrupt:  # before any test ran: nothing to keep but the selection
        with session_scope(url) as session:
            machine.cancel(session, run_id, INTERRUPTED)
        with session_scope(url) as session:
            raise RunInterrupted(_outcome(session.get(Run, run_id))) from None
    except Exception as exc:
        with session_scope(url) as session:  # a cancel or timeout that came first stays
            machine.error(session, run_id, f"{type(exc).__name__}: {exc}")
        if isinstance(exc, ValueError) and not isinstance(exc, UserError):  # UpstreamError, RulesError
            raise UserError(str(exc).splitlines()[0]) from exc
        raise


def _progress_keeper(url: str, run_id: str) -> Callable[[dict], None]:
    """Keeps the latest progress in ``runs.summary["progress"]``: the dashboard shows it live."""
    def keep(snapshot: dict) -> None:
        with session_scope(url) as session:
            run = session.get(Run, run_id)
            if run is not None and run.status in EXECUTING:
                run.summary = {**(run.summary or {}), "progress": snapshot}
    return keep


def _execute(settings: Settings, run_id: str, progress: StageClock, executor: Executor | None) -> RunOutcome:
    warm = Prewarmed()
    try:
        return _select_and_run(settings, run_id, progress, executor, warm)
    finally:
        warm.close()  # what no shard took (another executor, a failed or cancelled run)


def _prewarm(warm: Prewarmed, source, sides: dict[str, Side], shas: dict[str, str], version_true: bool) -> None:
    """Each side that runs here gets its warm interpreter; the to side's (started last) collects."""
    for name in ("from", "to") if version_true else ("to",):
        try:
            checkout = Path(source.checkout(shas[name]))
        except ValueError:  # a source without working trees: the selection says so in its own words
            return
        warm.start(str(sides[name].env.python), checkout)


def _select_and_run(settings: Settings, run_id: str, progress: StageClock, executor: Executor | None,
                    warm: Prewarmed) -> RunOutcome:
    import selector
    from selector.artifacts import write as write_selection
    from selector.history import History
    from selector.upstream import open_upstream

    url = settings.resolved_database_url
    with session_scope(url) as session:
        started = machine.start(session, run_id)  # not when cancelled while it waited in the queue
        run = session.get(Run, run_id)
        if not started:
            return _outcome(run)
        request = dict(run.summary.get("request", {}))
        spec, from_ref, to_ref, shards, executor_name = run.upstream, run.from_ref, run.to_ref, run.shards, run.executor
    history_key, spec = spec, _upstream_spec(settings, spec)
    # Absolute, so the dashboard finds the artifacts whatever directory it is started from.
    out_dir = Path(request.get("output_dir") or settings.data_dir / "runs" / run_id).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    executor = executor or make_executor(settings, executor_name)  # a bad executor fails before selecting

    progress("resolve", f"opening upstream {history_key}", None, None)
    source = open_upstream(spec, cache_dir=settings.resolved_cache_dir, github_token=settings.github_token,
                           github_api_url=settings.github_api_url)
    from_sha, to_sha = source.resolve(from_ref), source.resolve(to_ref)
    sides = _prepare_sides(settings, run_id, source, request, {"from": from_ref, "to": to_ref},
                           {"from": from_sha, "to": to_sha}, progress)
    version_true = is_version_true({name: side.env.build for name, side in sides.items()})
    if settings.warm_runner:  # the test interpreters import torch and op_db while the selector works
        _prewarm(warm, source, sides, {"from": from_sha, "to": to_sha}, version_true)
    rules = _load_rules(request.get("rules") or [])
    history = History.from_records(_history_records(url, history_key, run_id))
    selection = selector.select(source, from_ref, to_ref, rules=rules, budget=request.get("budget"),
                                shards=shards, history=history, progress=progress,
                                cache_dir=settings.resolved_cache_dir, pytest_runner=warm.runner,
                                torch_version=sides["to"].env.torch_version if version_true else None)
    write_selection(selection, out_dir)
    _store_selection(url, run_id, selection, from_sha, to_sha, str(out_dir))
    if is_cancelled(url, run_id):  # cancelled while selecting: nothing to run
        return _finish(url, run_id, rules, out_dir, from_sha, progress)

    if version_true and not _from_side_done(url, run_id):  # the from side on its own torch: the baseline
        _run_from_side(settings, run_id, source, sides["from"], from_sha, selection, request, executor,
                       rules, out_dir, progress)
    progress("checkout", f"checking out {to_ref} ({to_sha[:12]})", None, None)
    checkout = source.checkout(to_sha)
    if not sides["to"].device.ok:  # one verdict for the side, not one failure per selected test
        progress("run", sides["to"].device.verdict, None, None)
        store_shard(url, run_id, 0, [device_record(sides["to"])])
        return _finish(url, run_id, rules, out_dir, from_sha, progress)
    repro = repro_prefix(checkout, request.get("rules") or [], python=str(sides["to"].env.python))
    jobs = _shard_jobs(run_id, selection, spec, to_sha, checkout, request, settings, sides["to"])
    total = sum(len(job.tests) for job in jobs)
    done_tests = 0

    def on_record(record) -> None:
        nonlocal done_tests
        done_tests += 1
        progress("run", f"{record.outcome:9} {record.test_id}", done_tests, total)

    def on_shard(shard_done) -> None:
        progress("run", f"shard {shard_done.shard} done", done_tests, total)

    progress("run", f"running {total} tests in {len(jobs)} shard(s) on {executor.name}", 0, total)
    try:
        executor.execute(jobs, on_shard_done=on_shard, on_record=on_record)
    except KeyboardInterrupt:  # the shards have stopped and stored what they ran: judge and keep it
        with session_scope(url) as session:
            machine.cancel(session, run_id, INTERRUPTED)
        raise RunInterrupted(_finish(url, run_id, rules, out_dir, from_sha, progress, repro)) from None
    return _finish(url, run_id, rules, out_dir, from_sha, progress, repro)


def _upstream_spec(settings: Settings, stored: str) -> str:
    """The upstream to open: the database keeps it with credentials masked, the settings have them."""
    if settings.upstream and redact(settings.upstream) == stored:
        return settings.upstream
    return stored


def device_record(side: Side) -> TestRecord:
    """One error result for a side whose device does not build or load, instead of one per test."""
    device = side.device
    return TestRecord(test_id=device_test_id(device), outcome=Outcome.ERROR, message=device.verdict,
                      traceback="\n".join(device.lines) or None, shard=0)


def _shard_jobs(run_id: str, selection, spec: str, sha: str, checkout: Path, request: dict, settings: Settings,
                side: Side) -> list[ShardJob]:
    build = side.env.build
    return [ShardJob(run_id, index, tests, upstream=spec, sha=sha, checkout=str(checkout),
                     rules=list(request.get("rules") or []), test_timeout=settings.test_timeout,
                     shard_timeout=settings.shard_timeout, reruns=settings.reruns, warm=settings.warm_runner,
                     torch=None if build.kind == INSTALLED else build.to_dict(),
                     backend_dir=str(settings.backend_dir) if settings.backend_dir else None)
            for index, tests in enumerate(selection.shards) if tests]


def _prepare_sides(settings: Settings, run_id: str, source, request: dict, refs: dict[str, str],
                   shas: dict[str, str], progress: Progress) -> dict[str, Side]:
    """Each side's torch and environment, recorded on the run before anything runs on them."""
    requested = dict(request.get("torch") or {})
    sides = plan_sides(settings.resolved_cache_dir, requested=requested, refs=refs,
                       read_version_txt=lambda side: source.read_file(shas[side], "version.txt"),
                       by_ref=settings.torch_by_ref, progress=progress,
                       backend=Path(settings.backend_dir) if settings.backend_dir else BACKEND)
    for side in sides.values():
        progress("env", describe(side), None, None)
    with session_scope(settings.resolved_database_url) as session:
        run = session.get(Run, run_id)
        earlier = (run.torch or {}).get("from") or {}
        run.torch = {name: side.record() for name, side in sides.items()}
        if earlier.get("run_id") and earlier.get("build") == run.torch["from"]["build"]:
            run.torch["from"]["run_id"] = earlier["run_id"]  # a resumed run keeps its from-side run
    return sides


def _run_from_side(settings: Settings, run_id: str, source, side: Side, from_sha: str, selection, request: dict,
                   executor: Executor, rules, out_dir: Path, progress: Progress) -> str:
    """Run the selected tests at the from ref on the from torch, as a run of their own (trigger
    ``baseline``) that ``_baseline_failures`` then finds; returns its id."""
    url = settings.resolved_database_url
    with session_scope(url) as session:
        parent = session.get(Run, run_id)
        baseline = Run(status=RunStatus.RUNNING, trigger="baseline", upstream=parent.upstream,
                       from_ref=parent.from_ref, to_ref=parent.from_ref, from_sha=from_sha, to_sha=from_sha,
                       executor=parent.executor, shards=parent.shards, selected=len(selection.tests),
                       started_at=dt.datetime.now(dt.timezone.utc),
                       torch={"to": side.record()},
                       summary={"request": {"rules": request.get("rules") or []}, "baseline_of": run_id})
        session.add(baseline)
        session.flush()
        baseline_id, spec = baseline.id, _upstream_spec(settings, parent.upstream)
        parent.torch = {**parent.torch, "from": {**parent.torch["from"], "run_id": baseline_id}}
    baseline_dir = out_dir / "from-side"
    baseline_dir.mkdir(parents=True, exist_ok=True)
    with session_scope(url) as session:
        session.get(Run, baseline_id).output_dir = str(baseline_dir)
    if not side.device.ok:
        progress("run", f"from side: {side.device.verdict}", None, None)
        store_shard(url, baseline_id, 0, [device_record(side)])
    else:
        progress("checkout", f"checking out {side.ref} ({from_sha[:12]}) for the from side", None, None)
        checkout = source.checkout(from_sha)
        jobs = _shard_jobs(baseline_id, selection, spec, from_sha, checkout, request, settings, side)
        total, done = sum(len(job.tests) for job in jobs), 0

        def on_record(record) -> None:
            nonlocal done
            done += 1
            progress("from", f"{record.outcome:9} {record.test_id}", done, total)

        progress("from", f"running {total} tests on torch {side.env.torch_version} (from side)", 0, total)
        executor.execute(jobs, on_record=on_record)
    _finish(url, baseline_id, rules, baseline_dir, from_sha, StageClock(_quiet))
    return baseline_id


def _from_side_done(url: str, run_id: str) -> bool:
    with session_scope(url) as session:
        earlier = ((session.get(Run, run_id).torch or {}).get("from") or {}).get("run_id")
        return earlier is not None and session.get(Run, earlier).status in COMPLETED


def _load_rules(paths: list[str]):
    if not paths:
        return None
    from testdefs import load_rules

    return load_rules([Path(p) for p in paths])


def _history_records(url: str, upstream: str, run_id: str) -> list[dict]:
    with session_scope(url) as session:
        earlier = session.scalars(select(Run.id).where(Run.upstream == upstream, Run.id != run_id,
                                                       Run.status.in_(COMPLETED))
                                  .order_by(Run.created_at.desc()).limit(HISTORY_RUNS)).all()
        if not earlier:
            return []
        rows = session.execute(select(TestResult.test_id, TestResult.outcome, TestResult.duration)
                               .where(TestResult.run_id.in_(earlier))).all()
    return [{"id": t, "outcome": o, "duration": d} for t, o, d in rows]


def _baseline_failures(url: str, upstream: str, run_id: str, from_sha: str, baseline: str | None = None) -> set[str]:
    """Normalised ids that failed in the run of the from side: ``baseline`` when this run made one
    (version-true), else the latest finished run with ``to_sha == from_sha``."""
    with session_scope(url) as session:
        if baseline is None:
            baseline = session.scalar(select(Run.id).where(Run.upstream == upstream, Run.id != run_id,
                                                           Run.to_sha == from_sha, Run.status.in_(COMPLETED))
                                      .order_by(Run.created_at.desc()).limit(1))
        if baseline is None:
            return set()
        return set(session.scalars(select(TestResult.normalised_id).where(
            TestResult.run_id == baseline, TestResult.outcome.in_(FAILING), TestResult.flaky.is_(False))).all())


def _ops_by_test(url: str, run_id: str) -> dict[str, tuple[str, ...]]:
    """OpInfo names in each selected test's evidence: the patch splits them off the method name."""
    with session_scope(url) as session:
        rows = session.execute(select(Explanation.test_id, Explanation.evidence)
                               .where(Explanation.run_id == run_id, Explanation.selected.is_(True))).all()
    return {test_id: tuple(sorted({e["op"] for e in evidence or [] if e.get("op")})) for test_id, evidence in rows}


def _store_selection(url: str, run_id: str, selection, from_sha: str, to_sha: str, out_dir: str) -> None:
    position = {test_id: i for i, test_id in enumerate(selection.tests)}
    shard_of = {test_id: i for i, shard in enumerate(selection.shards) for test_id in shard}
    with session_scope(url) as session:
        run = session.get(Run, run_id)
        run.from_sha, run.to_sha, run.output_dir = from_sha, to_sha, out_dir
        run.funnel, run.considered, run.selected = dict(selection.funnel), len(selection.decisions), len(selection.tests)
        machine.selected(session, run_id)
        session.execute(delete(Explanation).where(Explanation.run_id == run_id))  # a resumed run re-selects
        session.add_all(Explanation(
            run_id=run_id, test_id=d.test_id, selected=d.selected, stage=d.stage, reason=d.reason, rule=d.rule,
            evidence=[e.model_dump(exclude_none=True) for e in d.evidence],
            position=position.get(d.test_id), shard=shard_of.get(d.test_id)) for d in selection.decisions)


def _adopt_run_ids(url: str, run_id: str, out_dir: Path) -> None:
    """Name each selected test as the runner ran it, in storage and in the selection's artifacts.

    Stage 4 collects every file in one process, where torch names the device class of later files
    ...SPYRE; pytest run on one file (the runner, a user's repro) names it ...PRIVATEUSE1. One id per
    test keeps the selection's reasons joined to the results and every id shown pasteable into pytest."""
    with session_scope(url) as session:
        ran = set(session.scalars(select(TestResult.test_id).where(TestResult.run_id == run_id)).all())
        chosen = session.scalars(select(Explanation).where(Explanation.run_id == run_id,
                                                           Explanation.selected.is_(True))).all()
        by_key = {drift_key(test_id): test_id for test_id in ran}
        renamed = {}
        for explanation in chosen:
            if explanation.test_id not in ran and drift_key(explanation.test_id) in by_key:
                renamed[explanation.test_id] = explanation.test_id = by_key[drift_key(explanation.test_id)]
    from selector import artifacts

    for name in ("selection.json", "explanations.json") if renamed else ():
        path = out_dir / name
        if path.is_file():
            document = _rename_ids(json.loads(path.read_text(encoding="utf-8")), renamed)
            path.write_text(artifacts.dumps(name, document), encoding="utf-8")


def _rename_ids(value, renamed: dict[str, str]):
    if isinstance(value, str):
        return renamed.get(value, value)
    if isinstance(value, list):
        return [_rename_ids(item, renamed) for item in value]
    if isinstance(value, dict):
        return {renamed.get(key, key): _rename_ids(item, renamed) for key, item in value.items()}
    return value


def _finish(url: str, run_id: str, rules, out_dir: Path, from_sha: str, clock: StageClock,
            repro: str | None = None) -> RunOutcome:
    clock("report", "judging results and writing artifacts", None, None)
    _adopt_run_ids(url, run_id, out_dir)
    with session_scope(url) as session:
        run = session.get(Run, run_id)
        upstream, from_ref, to_ref, torch = run.upstream, run.from_ref, run.to_ref, dict(run.torch or {})
    baseline = _baseline_failures(url, upstream, run_id, from_sha, (torch.get("from") or {}).get("run_id"))
    ops = _ops_by_test(url, run_id)
    to_side = torch.get("to") or {}
    torch_version = to_side.get("torch_version") if to_side.get("env") else None  # None: installed torch
    judged = []
    for record in load_records(url, run_id):
        if is_device_record(record.test_id):  # the side's device is broken: no rule or baseline applies
            judged.append(Judged(record, DEVICE_BROKEN, record.test_id, None, None, ()))
            continue
        decision = (rules.decide(record.test_id, torch_version=torch_version or version_from_ref(to_ref))
                    if rules is not None else None)
        normalised = normalise(record.test_id)
        judged.append(Judged(record, verdict(record, decision.mode if decision else None, baseline, normalised),
                             normalised, decision.entry if decision else None,
                             decision.pattern if decision else None, ops.get(record.test_id, ())))
    write_results_jsonl(judged, out_dir / "results.jsonl")
    write_junit(judged, out_dir / "junit.xml", name=f"spyre {from_ref}->{to_ref}")
    (out_dir / "testdefs-patch.yaml").write_text(dump_patch(build_patch(judged, from_ref=from_ref, to_ref=to_ref,
                                                                         run_id=run_id)), encoding="utf-8")
    summary = {**_summarise(judged), **torch_summary(torch)}
    failed = bool(summary["new_failures"] or any(b["side"] == "to" for b in summary["device_broken"]))
    summary["timings"] = clock.stop()
    summary["tests_seconds"] = round(sum(j.record.duration for j in judged), 3)
    summary["repro"] = repro  # + a test id (relay.execution.runner.process.repro_command): runs it as the runner did
    summary["selection"] = _selection_funnel(url, run_id)
    with session_scope(url) as session:
        verdicts = {(j.record.test_id, j.record.shard): j.verdict for j in judged}
        for row in session.scalars(select(TestResult).where(TestResult.run_id == run_id)):
            row.verdict = verdicts.get((row.test_id, row.shard))
        session.flush()  # the totals below count new failures by verdict
        run = session.get(Run, run_id)
        # Kept once here, so the dashboard's first view of a large run reads one row, not all of them.
        run.summary = {**summary, "request": run.summary.get("request", {}), "totals": run_totals(session, run_id)}
        # A run cancelled or timed out meanwhile keeps that state and its time.
        machine.complete(session, run_id, new_failures=failed)
        session.refresh(run)
        return _outcome(run)


SELECTION_STAGES = ("diff", "rules", "agent", "verify")


def _selection_funnel(url: str, run_id: str) -> dict:
    """Tests considered, dropped per stage, selected: one unit, so considered - drops = selected."""
    with session_scope(url) as session:
        rows = session.execute(select(Explanation.stage, Explanation.selected, func.count())
                               .where(Explanation.run_id == run_id)
                               .group_by(Explanation.stage, Explanation.selected)).all()
    dropped = dict.fromkeys(SELECTION_STAGES, 0)
    for stage, selected, count in rows:
        if not selected:
            dropped[stage] = dropped.get(stage, 0) + count
    return {"considered": sum(count for _, _, count in rows), "dropped": dropped,
            "selected": sum(count for _, selected, count in rows if selected)}


def torch_summary(torch: dict) -> dict:
    """What the summary says about each side's torch, and every side whose device is broken."""
    sides = {name: side for name, side in torch.items() if isinstance(side, dict) and "device" in side}
    broken = [{"side": name, "torch_version": side["torch_version"], "status": side["device"]["status"],
               "verdict": DeviceStatus.from_dict(side["device"]).verdict, "lines": side["device"].get("lines", [])}
              for name, side in sides.items() if side["device"]["status"] != "ok"]
    return {"torch": {name: side.get("summary") for name, side in sides.items()}, "device_broken": broken}


def _summarise(judged: list[Judged]) -> dict:
    outcomes: dict[str, int] = {}
    verdicts: dict[str, int] = {}
    by_verdict: dict[str, dict[str, int]] = {}  # verdict -> outcome -> tests: one test counted once
    for item in judged:
        outcomes[item.record.outcome] = outcomes.get(item.record.outcome, 0) + 1
        verdicts[item.verdict] = verdicts.get(item.verdict, 0) + 1
        row = by_verdict.setdefault(item.verdict, {})
        row[item.record.outcome] = row.get(item.record.outcome, 0) + 1
    return {
        "outcomes": outcomes, "verdicts": verdicts, "by_verdict": by_verdict, "executed": len(judged),
        "new_failures": [i.record.test_id for i in judged if i.verdict == NEW_FAILURE],
        "new_failure_errors": {i.record.test_id: i.record.message or i.record.outcome
                               for i in judged if i.verdict == NEW_FAILURE},
        "fixed": [i.record.test_id for i in judged if i.verdict == FIXED],
        "flaky": [i.record.test_id for i in judged if i.record.flaky],
    }


def _outcome(run: Run) -> RunOutcome:
    summary = dict(run.summary or {})
    return RunOutcome(run.id, RunStatus(run.status), list(summary.get("new_failures", [])),
                      Path(run.output_dir) if run.output_dir else None, summary, run.error)


def _quiet(stage: str, message: str, done: int | None, total: int | None) -> None:
    return None
