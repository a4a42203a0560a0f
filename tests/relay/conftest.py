"""Fixtures shared by the relay's parts (intake, runs, reporting)."""
from __future__ import annotations

import pytest

from relay.config import Settings
from tests.relay.intake.webhook_helpers import SECRET


@pytest.fixture
def relay_settings(tmp_path) -> Settings:
    """Settings for a relay with its own data directory and the test webhook secret."""
    return Settings(data_dir=tmp_path / "relay", webhook_secret=SECRET)
