"""Failures are re-run in fresh processes: a later pass means flaky, failing every time is consistent."""
from __future__ import annotations

from relay.execution.runner import RunnerOptions
from tests.relay.runner_helpers import FLAKY_FILE, ids, make_checkout


def test_rerun_tells_flaky_from_consistent(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_flaky.py": FLAKY_FILE})
    records = run_shard(checkout, ids("test_flaky.py", "test_flaky", "test_always_fails"), RunnerOptions(reruns=2))
    flaky, consistent = records
    assert (flaky.outcome, flaky.flaky, flaky.attempts) == ("passed", True, 2)
    assert "first run fails" in flaky.message
    assert (consistent.outcome, consistent.flaky, consistent.attempts) == ("failed", False, 3)
    assert "Tensor-likes are not close!" in consistent.message


def test_no_reruns_reports_the_first_failure(run_shard, tmp_path):
    checkout = make_checkout(tmp_path, {"test_flaky.py": FLAKY_FILE})
    (flaky,) = run_shard(checkout, ids("test_flaky.py", "test_flaky"), RunnerOptions(reruns=0))
    assert (flaky.outcome, flaky.flaky, flaky.attempts) == ("failed", False, 1)
