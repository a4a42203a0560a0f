"""Fixtures shared by the relay's parts (intake, runs, reporting)."""
from __future__ import annotations

import pytest

from relay.config import Settings
from relay.execution import runner
from relay.execution.local import LocalExecutor
from relay.runs import pipeline
from tests.relay.intake.webhook_helpers import SECRET
from tests.tiers import starts_processes


@pytest.fixture
def relay_settings(tmp_path) -> Settings:
    """Settings for a relay with its own data directory and the test webhook secret."""
    return Settings(data_dir=tmp_path / "relay", webhook_secret=SECRET)


# The relay's entry points that start processes (a pytest subprocess per upstream file), as
# fixtures, so the tests that use them are `slow` (tests/tiers.py).
@pytest.fixture
@starts_processes
def local_executor():
    return LocalExecutor


@pytest.fixture
@starts_processes
def run_shard():
    return runner.run_shard


@pytest.fixture
@starts_processes
def execute_run():
    return pipeline.execute_run


@pytest.fixture
@starts_processes
def run_change():
    return pipeline.run_change
