"""Cancelling a run reaches it wherever it is: queued, between upstream files, or after selection."""
from __future__ import annotations

from sqlalchemy import select

from relay.config import Settings
from relay.execution.runner import RunnerOptions
from relay.runs.control import cancel_run, rerun
from relay.runs.pipeline import create_run
from relay.storage import Run, TestResult, session_scope
from tests.relay.runner_helpers import ids, make_checkout
from tests.relay.upstream_helpers import make_upstream

PASSING = '''
def test_one():
    pass

def test_two():
    pass
'''


def test_shard_stops_before_the_next_file_when_asked(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_a.py": PASSING, "test_b.py": PASSING})
    wanted = ids("test_a.py", "test_one", "test_two") + ids("test_b.py", "test_one", "test_two")
    seen: list[str] = []
    records = run_shard(checkout, wanted, RunnerOptions(reruns=0), on_record=lambda r: seen.append(r.test_id),
                        should_stop=lambda: len(seen) > 0)
    assert [r.test_id for r in records] == wanted[:2]  # test_a.py ran whole, test_b.py never started
    assert {r.outcome for r in records} == {"passed"}


def test_cancelled_queued_run_never_selects(execute_run, tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    run_id = create_run(settings, upstream=str(make_upstream(tmp_path / "upstream")), from_ref="2.13", to_ref="2.14")
    assert cancel_run(settings.resolved_database_url, run_id, "not needed any more")
    outcome = execute_run(settings, run_id)
    assert (outcome.status, outcome.error) == ("cancelled", "not needed any more")
    with session_scope(settings.resolved_database_url) as session:
        run = session.get(Run, run_id)
        assert run.started_at is None and run.selected == 0 and run.finished_at is not None
    assert not cancel_run(settings.resolved_database_url, run_id, "twice")  # already finished


def test_run_cancelled_while_running_keeps_what_ran_and_its_state(execute_run, tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    run_id = create_run(settings, upstream=str(make_upstream(tmp_path / "upstream")), from_ref="2.13", to_ref="2.14")
    url = settings.resolved_database_url

    def cancel_on_first_result(stage, message, done, total):
        if stage == "run" and done == 1:
            cancel_run(url, run_id, "cancelled by a test")

    outcome = execute_run(settings, run_id, progress=cancel_on_first_result)
    assert outcome.status == "cancelled"
    with session_scope(url) as session:
        run = session.get(Run, run_id)
        stored = session.scalars(select(TestResult.test_id).where(TestResult.run_id == run_id)).all()
        assert run.status == "cancelled" and run.error == "cancelled by a test"
        assert 0 < len(stored) <= run.selected  # what ran before the cancel is kept
    assert (outcome.output_dir / "results.jsonl").exists()
    assert execute_run(settings, run_id).status == "cancelled"  # a cancelled run is never resumed


def test_rerun_asks_for_the_same_change_and_runs_it_again(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    first = create_run(settings, upstream=str(make_upstream(tmp_path / "upstream")), from_ref="2.13",
                       to_ref="2.14", shards=2, budget="50%")
    again = rerun(settings, first)
    with session_scope(settings.resolved_database_url) as session:
        original, copy = session.get(Run, first), session.get(Run, again)
        assert (copy.status, copy.trigger) == ("queued", "dashboard")
        assert (copy.upstream, copy.from_ref, copy.to_ref, copy.shards) == \
            (original.upstream, original.from_ref, original.to_ref, original.shards)
        assert copy.summary["request"]["budget"] == "50%"
