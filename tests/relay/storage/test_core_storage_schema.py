"""Storage goes through Alembic on every backend; the schema matches the models."""
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from relay.errors import UserError
from relay.storage import Base, Run, TestResult, init_db, session_scope


def test_init_db_is_idempotent_and_matches_models(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    engine = init_db(url)
    init_db(url)  # a second upgrade is a no-op
    with engine.connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == [], f"models and migrations disagree: {diff}"


def test_results_belong_to_runs(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'relay.db'}"
    init_db(url)
    with session_scope(url) as session:
        run = Run(from_ref="2.13", to_ref="2.14")
        run.results.append(TestResult(test_id="test/a.py::TestAPRIVATEUSE1::test_x_spyre",
                                      normalised_id="test/a.py::TestA::test_x", file="test/a.py",
                                      outcome="passed"))
        session.add(run)
    with session_scope(url) as session:
        stored = session.query(Run).one()
        assert [r.outcome for r in stored.results] == ["passed"]
        assert stored.status == "queued"


def test_unreachable_database_is_a_user_error() -> None:
    with pytest.raises(UserError, match="cannot open database"):
        init_db("postgresql://nobody@127.0.0.1:1/none")
