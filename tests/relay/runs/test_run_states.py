"""The run state machine: whoever moves a run first wins, whichever part of the relay tries."""
from __future__ import annotations

import pytest

from relay.runs import machine
from relay.runs.states import ACTIVE, COMPLETED, FINISHED, RESUMABLE, RunStatus
from relay.storage import Run, session_scope
from tests.relay.storage_helpers import new_run


@pytest.fixture
def url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'relay.db'}"


def move(url: str, run_id: str, transition, *args, **kwargs) -> tuple[bool, RunStatus, str | None]:
    with session_scope(url) as session:
        moved = transition(session, run_id, *args, **kwargs)
    with session_scope(url) as session:
        run = session.get(Run, run_id)
        return moved, RunStatus(run.status), run.error


def test_a_run_goes_from_queued_to_passed(url):
    run_id = new_run(url, status=RunStatus.QUEUED)
    assert move(url, run_id, machine.start)[:2] == (True, RunStatus.SELECTING)
    assert move(url, run_id, machine.selected)[:2] == (True, RunStatus.RUNNING)
    assert move(url, run_id, machine.complete, new_failures=False)[:2] == (True, RunStatus.PASSED)
    with session_scope(url) as session:
        assert session.get(Run, run_id).finished_at is not None


def test_new_failures_complete_a_run_as_failed(url):
    run_id = new_run(url, status=RunStatus.RUNNING)
    assert move(url, run_id, machine.complete, new_failures=True)[:2] == (True, RunStatus.FAILED)


def test_the_sweepers_timeout_is_not_overwritten_by_a_late_error(url):
    run_id = new_run(url, status=RunStatus.RUNNING)
    assert move(url, run_id, machine.time_out, "stuck") == (True, RunStatus.TIMED_OUT, "stuck")
    assert move(url, run_id, machine.error, "RuntimeError: late") == (False, RunStatus.TIMED_OUT, "stuck")
    assert move(url, run_id, machine.complete, new_failures=False)[:2] == (False, RunStatus.TIMED_OUT)


def test_a_cancel_wins_over_the_pipeline_finishing(url):
    run_id = new_run(url, status=RunStatus.SELECTING)
    assert move(url, run_id, machine.cancel, "newer push") == (True, RunStatus.CANCELLED, "newer push")
    assert move(url, run_id, machine.complete, new_failures=True)[:2] == (False, RunStatus.CANCELLED)
    assert move(url, run_id, machine.start)[:2] == (False, RunStatus.CANCELLED)  # never resumed
    assert machine.is_cancelled(url, run_id)


def test_a_finished_run_cannot_be_cancelled_or_timed_out(url):
    run_id = new_run(url, status=RunStatus.PASSED)
    assert move(url, run_id, machine.cancel, "too late")[:2] == (False, RunStatus.PASSED)
    assert move(url, run_id, machine.time_out, "too late")[:2] == (False, RunStatus.PASSED)
    assert move(url, run_id, machine.error, "too late")[:2] == (False, RunStatus.PASSED)


@pytest.mark.parametrize("status", [RunStatus.ERROR, RunStatus.TIMED_OUT])
def test_an_errored_or_timed_out_run_resumes_when_executed_again(url, status):
    run_id = new_run(url, status=status, error="earlier")
    assert move(url, run_id, machine.start) == (True, RunStatus.SELECTING, None)


def test_the_groups_partition_the_states():
    assert ACTIVE | FINISHED == set(RunStatus) and not ACTIVE & FINISHED
    assert COMPLETED <= FINISHED and not COMPLETED & RESUMABLE
    assert RunStatus.CANCELLED not in RESUMABLE
