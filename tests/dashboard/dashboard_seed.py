"""Fill a relay database with realistic runs through the storage models (the dashboard's tests and
benchmark use it; nothing here depends on the runner).

The story every seeded database tells, oldest run first:
- FLAKY_TEST flips between passed and failed, and needed a re-run to pass twice;
- NEW_FAILURE_TEST passed in every run but the latest, where it is a new failure;
- XFAIL_TEST is a known failure in every run;
- filler tests mostly pass, some are skipped, one times out in the latest run;
- the latest run comes from a PR whose title carries HTML (the dashboard must escape it),
  and a run is still queued with a report that keeps failing.
"""
from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import insert

from relay.storage import Event, Explanation, Report, Run, TestResult, init_db, session_scope
from relay.storage.totals import run_totals
from testdefs.ids import normalise

FLAKY_TEST = "test/test_nn.py::TestNNDeviceTypePRIVATEUSE1::test_conv2d_spyre_float32"
NEW_FAILURE_TEST = "test/test_ops.py::TestCommonPRIVATEUSE1::test_matmul_spyre_float16"
XFAIL_TEST = "test/test_torch.py::TestTorchDeviceTypePRIVATEUSE1::test_sort_spyre_bfloat16"
HOSTILE_TITLE = 'Fix <script>alert("x")</script> in matmul & friends'
FILES = ("test/test_ops.py", "test/test_nn.py", "test/test_torch.py", "test/test_binary_ufuncs.py")
CLASSES = {"test/test_ops.py": "TestCommonPRIVATEUSE1", "test/test_nn.py": "TestNNDeviceTypePRIVATEUSE1",
           "test/test_torch.py": "TestTorchDeviceTypePRIVATEUSE1",
           "test/test_binary_ufuncs.py": "TestBinaryUfuncsPRIVATEUSE1"}
DTYPES = ("float32", "float16", "bfloat16")
REFS = (("2.13", "2.14"), ("main", "pr/1201"), ("2.14", "main"), ("main", "pr/1207"))
TRACEBACK = ("Traceback (most recent call last):\n  File \"test/test_ops.py\", line 812, in test_matmul\n"
             "    self.assertEqual(actual, expected)\nAssertionError: Tensor-likes are not close!\n"
             "Mismatched elements: 3 / 64 (4.7%)")


@dataclass
class Seeded:
    url: str
    run_ids: list[str] = field(default_factory=list)  # finished runs, oldest first
    queued_run_id: str = ""
    results: int = 0

    @property
    def latest_run_id(self) -> str:
        return self.run_ids[-1]


def _filler_ids(count: int) -> list[str]:
    ids = []
    for k in range(count):
        file = FILES[k % len(FILES)]
        ids.append(f"{file}::{CLASSES[file]}::test_op{k // len(DTYPES)}_spyre_{DTYPES[k % len(DTYPES)]}")
    return ids


def _sim_stats(rng: random.Random) -> dict:
    """The shape backend/spyre_device/sim/stats.py snapshots: op counts by status, time, transfers."""
    native, fallback = rng.randint(1, 30), rng.choice((0, 0, 0, 2))
    ops = {"aten::add.Tensor": {"status": "native", "count": native, "sim_seconds": native * 1e-6}}
    if fallback:
        ops["aten::sort"] = {"status": "fallback", "count": fallback, "sim_seconds": 0.0}
    return {"ops": ops, "op_count": native + fallback, "native_ops": native, "fallback_ops": fallback,
            "adapted_ops": 0, "unsupported_ops": 0, "sim_seconds": native * 1e-6,
            "fallbacks": {"aten::sort": fallback} if fallback else {}, "adapters": {},
            "host_transfers": {"device_to_host": {"count": 1, "bytes": 256},
                               "host_to_device": {"count": 0, "bytes": 0}}}


def _evidence(test_id: str) -> list[dict]:
    file = test_id.split("::", 1)[0]
    if "test_ops" in file or "ufuncs" in file:
        return [{"file": "torch/testing/_internal/common_methods_invocations.py",
                 "hunk": "@@ -1200,6 +1200,9 @@", "op": "matmul"}]
    return [{"file": file, "hunk": "@@ -40,4 +40,6 @@"}]


def _story_outcome(test_id: str, index: int, latest: bool) -> dict:
    if test_id == FLAKY_TEST:
        failing = index % 2 == 1
        rerun_passed = index in (2, 4)
        return {"outcome": "failed" if failing and not rerun_passed else "passed",
                "flaky": rerun_passed, "attempts": 2 if (failing or rerun_passed) else 1,
                "verdict": "known_failure" if failing and not rerun_passed else "ok",
                "message": "conv2d: result differs after re-run" if failing else None}
    if test_id == NEW_FAILURE_TEST:
        if latest:
            return {"outcome": "failed", "verdict": "new_failure", "attempts": 2,
                    "message": "AssertionError: Tensor-likes are not close!", "traceback": TRACEBACK}
        return {"outcome": "passed", "verdict": "ok"}
    if test_id == XFAIL_TEST:
        return {"outcome": "xfailed", "verdict": "known_failure", "message": "sort is unstable on spyre"}
    return {}


def _filler_outcome(rng: random.Random, k: int, latest: bool) -> dict:
    if latest and k == 5:
        return {"outcome": "timed_out", "verdict": "still_failing", "message": "timed out after 120 s"}
    roll = rng.random()
    if roll < 0.08:
        return {"outcome": "skipped", "verdict": "ok", "message": "not supported on spyre"}
    return {"outcome": "passed", "verdict": "ok"}


def seed_database(url: str, *, runs: int = 6, tests_per_run: int = 40, dropped_per_run: int = 20,
                  seed: int = 7, now: dt.datetime | None = None, output_root: Path | None = None,
                  keep_totals: bool = True) -> Seeded:
    """Insert ``runs`` finished runs plus one queued run; returns their ids. ``keep_totals=False``
    stores finished runs as an older relay did, without their totals in ``runs.summary``."""
    init_db(url)
    rng = random.Random(seed)
    now = now or dt.datetime.now(dt.timezone.utc)
    story = [FLAKY_TEST, NEW_FAILURE_TEST, XFAIL_TEST]
    selected_ids = story + _filler_ids(max(0, tests_per_run - len(story)))
    dropped_ids = [f"test/test_sparse.py::TestSparsePRIVATEUSE1::test_sp{k}_spyre_float32"
                   for k in range(dropped_per_run)]
    seeded = Seeded(url=url)
    with session_scope(url) as session:
        for index in range(runs):
            latest = index == runs - 1
            from_ref, to_ref = REFS[index % len(REFS)]
            created = now - dt.timedelta(hours=3 * (runs - index))
            run = Run(created_at=created, started_at=created + dt.timedelta(seconds=20 + index),
                      finished_at=created + dt.timedelta(minutes=12, seconds=index),
                      status="failed" if latest or index % 2 else "passed",
                      trigger="webhook" if to_ref.startswith("pr/") else "cli",
                      upstream="https://github.com/pytorch/pytorch", from_ref=from_ref, to_ref=to_ref,
                      from_sha=f"{rng.getrandbits(160):040x}", to_sha=f"{rng.getrandbits(160):040x}",
                      considered=len(selected_ids) + len(dropped_ids), selected=len(selected_ids),
                      # the selector's own stage names, as relay.runs.pipeline stores them
                      funnel={"upstream_total": len(selected_ids) + len(dropped_ids) + 30,
                              "changed": len(selected_ids) + len(dropped_ids),
                              "applicable": len(selected_ids) + len(dropped_ids) - dropped_per_run // 3,
                              "triaged": len(selected_ids) + dropped_per_run // 3,
                              "verified": len(selected_ids), "selected": len(selected_ids)})
            session.add(run)
            session.flush()
            if latest and output_root is not None:
                run.output_dir = str(_write_artifacts(output_root / run.id, selected_ids))
            if to_ref.startswith("pr/") or latest:
                number = int(to_ref.split("/")[1]) if to_ref.startswith("pr/") else 1300 + index
                session.add(Event(source="github", event_type="pull_request",
                                  delivery_id=f"delivery-{seed}-{index}", status="processed", run_id=run.id,
                                  received_at=created - dt.timedelta(seconds=5),
                                  payload={"action": "synchronize", "number": number, "pull_request": {
                                      "number": number, "title": HOSTILE_TITLE if latest else f"Tweak op {index}",
                                      "html_url": f"https://github.com/pytorch/pytorch/pull/{number}"}}))
            session.execute(insert(Explanation), [
                *({"run_id": run.id, "test_id": tid, "selected": True, "stage": "verify" if pos % 3 else "diff",
                   "reason": f"{tid.split('::')[0]} changed in the hunk that defines this test"
                   if pos % 3 == 0 else "collected on spyre after the change touched its OpInfo",
                   "evidence": _evidence(tid), "position": pos, "shard": pos % 2}
                  for pos, tid in enumerate(selected_ids)),
                *({"run_id": run.id, "test_id": tid, "selected": False,
                   "stage": ("rules", "agent", "verify")[k % 3],
                   "reason": ("skipped by rule: sparse tensors are unsupported on spyre",
                              "agent: the change cannot reach sparse kernels",
                              "not collected: no spyre variant")[k % 3],
                   "rule": "testdefs/rules/demo/test_sparse.yaml:4" if k % 3 == 0 else None,
                   "evidence": [], "position": None, "shard": None}
                  for k, tid in enumerate(dropped_ids)),
            ])
            rows = []
            for k, tid in enumerate(selected_ids):
                detail = _story_outcome(tid, index, latest) or _filler_outcome(rng, k - len(story), latest)
                rows.append({"run_id": run.id, "test_id": tid, "normalised_id": normalise(tid),
                             "file": tid.split("::", 1)[0], "shard": k % 2,
                             "duration": round(0.05 + rng.random() * 2, 3),
                             "sim_stats": _sim_stats(rng),
                             "message": None, "traceback": None, "attempts": 1, "flaky": False, **detail})
            session.execute(insert(TestResult), rows)
            if keep_totals:  # as relay.runs.pipeline keeps them when a run finishes
                run.summary = {"totals": run_totals(session, run.id)}
            seeded.results += len(rows)
            session.add(Report(run_id=run.id, target="crcr", status="sent", attempts=1, updated_at=created))
            seeded.run_ids.append(run.id)
        queued = Run(created_at=now - dt.timedelta(minutes=4), status="queued", trigger="crcr",
                     from_ref="main", to_ref="pr/1210")
        session.add(queued)
        session.flush()
        session.add(Report(run_id=queued.id, target="github_check", status="failed", attempts=3,
                           last_error="HTTP 502 from api.github.com", updated_at=now))
        seeded.queued_run_id = queued.id
    return seeded


def _write_artifacts(directory: Path, selected_ids: list[str]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "selection.json").write_text(json.dumps({"tests": selected_ids}, indent=2, sort_keys=True))
    (directory / "testdefs-patch.yaml").write_text(
        f"# proposed by the relay\n- test: {NEW_FAILURE_TEST}\n  action: xfail\n  reason: new failure\n")
    return directory


def fresh_postgres_database(server_url: str) -> str:
    """A new, empty database on the test cluster, so seeded rows never meet another test's rows."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"dashboard_{random.getrandbits(48):012x}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def running_run(url: str, rows: list) -> str:
    """A fresh database holding one run still in progress with ``rows`` (model instances without a
    run id); returns the run id."""
    init_db(url)
    with session_scope(url) as session:
        run = Run(from_ref="2.13", to_ref="2.14", status="running")
        session.add(run)
        session.flush()
        for row in rows:
            row.run_id = run.id
        session.add_all(rows)
        return run.id
