"""Writing a shard's results: exactly once, however many times the shard is delivered."""
from __future__ import annotations

from sqlalchemy import func, select, update

from relay.execution.runner.records import TestRecord
from relay.storage import Run, TestResult, session_scope
from testdefs.ids import normalise


class UnknownRun(LookupError):
    pass


def store_shard(database_url: str, run_id: str, shard: int, records: list[TestRecord]) -> bool:
    """Store ``records`` for (run, shard) unless an earlier delivery already did; True if stored.

    The first statement updates the run row, which takes its row lock (PostgreSQL) or the write
    lock (SQLite) until commit: two deliveries of one shard storing at once are serialised, and
    the second then sees the first one's rows and stores nothing.
    """
    with session_scope(database_url) as session:
        locked = session.execute(update(Run).where(Run.id == run_id).values(status=Run.status))
        if locked.rowcount == 0:
            raise UnknownRun(f"run {run_id} does not exist")
        if shard_stored(session, run_id, shard):
            return False
        session.add_all(TestResult(
            run_id=run_id, test_id=r.test_id, normalised_id=normalise(r.test_id), file=r.file, shard=shard,
            outcome=r.outcome, duration=r.duration, message=r.message, traceback=r.traceback,
            attempts=r.attempts, flaky=r.flaky, sim_stats=r.sim_stats) for r in records)
        return True


def shard_stored(session, run_id: str, shard: int) -> bool:
    count = session.scalar(select(func.count()).select_from(TestResult)
                           .where(TestResult.run_id == run_id, TestResult.shard == shard))
    return bool(count)


def load_records(database_url: str, run_id: str) -> list[TestRecord]:
    """A run's results as records, in shard then storage order."""
    with session_scope(database_url) as session:
        rows = session.scalars(select(TestResult).where(TestResult.run_id == run_id)
                               .order_by(TestResult.shard, TestResult.id)).all()
        return [TestRecord(test_id=row.test_id, outcome=row.outcome, duration=row.duration,
                           message=row.message, traceback=row.traceback,
                           sim_stats=row.sim_stats or {}, shard=row.shard, attempts=row.attempts,
                           flaky=row.flaky) for row in rows]
