"""Run storage: SQLAlchemy models, Alembic migrations, SQLite by default, PostgreSQL by URL."""
from relay.storage.db import init_db, make_engine, session_scope
from relay.storage.models import Base, EvalRun, Event, Explanation, Report, Run, TestResult

__all__ = ["Base", "EvalRun", "Event", "Explanation", "Report", "Run", "TestResult",
           "init_db", "make_engine", "session_scope"]
