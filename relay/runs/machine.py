"""Every change of a run's state, each a conditional UPDATE: the whole state machine on one page.

A transition moves a run only from the states ``SOURCES`` allows, in one statement, so whoever
moves a run first wins and the others see ``False``: a cancel is never overwritten by the
pipeline finishing, nor the sweeper's ``timed_out`` by a late ``error``, whichever process or
machine (relay thread, Celery worker, dashboard, sweeper) tries.

    queued ──▶ selecting ──▶ running ──▶ passed | failed
      │            │            │
      ├────────────┴────────────┴──▶ cancelled (request) | error (could not complete)
      │            └────────────┴──▶ timed_out (sweeper)
    error, timed_out ──▶ selecting (executed again: resumed)
"""
from __future__ import annotations

import datetime as dt
import logging

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from relay.runs.states import ACTIVE, EXECUTING, RESUMABLE, RunStatus
from relay.storage import Run, session_scope

log = logging.getLogger(__name__)
S = RunStatus
SOURCES: dict[RunStatus, frozenset[RunStatus]] = {
    S.SELECTING: RESUMABLE,  # started, or resumed after an error or a timeout
    S.RUNNING: frozenset({S.SELECTING}),  # the selection is stored; shards go out
    S.PASSED: EXECUTING,
    S.FAILED: EXECUTING,
    S.ERROR: ACTIVE,
    S.CANCELLED: ACTIVE,
    S.TIMED_OUT: EXECUTING,
}
ERROR_TEXT_LIMIT = 2000


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _move(session: Session, run_id: str, to: RunStatus, **values) -> bool:
    moved = session.execute(update(Run).where(Run.id == run_id, Run.status.in_(SOURCES[to]))
                            .values(status=to, **values).execution_options(synchronize_session=False))
    if moved.rowcount == 1:  # one log line per state change, whoever makes it
        log.info("run %s: %s", run_id, to.value)
    return moved.rowcount == 1


def start(session: Session, run_id: str) -> bool:
    return _move(session, run_id, S.SELECTING, started_at=_now(), error=None, finished_at=None)


def selected(session: Session, run_id: str) -> bool:
    return _move(session, run_id, S.RUNNING)


def complete(session: Session, run_id: str, *, new_failures: bool) -> bool:
    return _move(session, run_id, S.FAILED if new_failures else S.PASSED, finished_at=_now())


def error(session: Session, run_id: str, message: str) -> bool:
    return _move(session, run_id, S.ERROR, error=message[:ERROR_TEXT_LIMIT], finished_at=_now())


def cancel(session: Session, run_id: str, reason: str) -> bool:
    return _move(session, run_id, S.CANCELLED, error=reason[:ERROR_TEXT_LIMIT], finished_at=_now())


def time_out(session: Session, run_id: str, message: str) -> bool:
    return _move(session, run_id, S.TIMED_OUT, error=message[:ERROR_TEXT_LIMIT], finished_at=_now())


def status_of(database_url: str, run_id: str) -> RunStatus | None:
    with session_scope(database_url) as session:
        found = session.scalar(select(Run.status).where(Run.id == run_id))
    return RunStatus(found) if found else None


def is_cancelled(database_url: str, run_id: str) -> bool:
    """Checked by the pipeline between its steps and by every shard between upstream files."""
    return status_of(database_url, run_id) == S.CANCELLED
