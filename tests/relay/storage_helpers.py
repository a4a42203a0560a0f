"""Helpers for tests that store runs: a database per test on SQLite or the session PostgreSQL."""
from __future__ import annotations

import uuid

from sqlalchemy import create_engine, text

from relay.storage import Run, init_db, session_scope


def fresh_postgres(postgres_url: str) -> str:
    """A new empty database in the session's PostgreSQL cluster (tests do not share tables)."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    admin = create_engine(postgres_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return postgres_url.rsplit("/", 1)[0] + f"/{name}"


def new_run(database_url: str, **fields) -> str:
    init_db(database_url)
    with session_scope(database_url) as session:
        run = Run(**{"from_ref": "2.13", "to_ref": "2.14", "status": "running", **fields})
        session.add(run)
        session.flush()
        return run.id
