from __future__ import annotations

import pytest

from relay.intake import create_app
from tests.relay.intake.webhook_helpers import RecordingExecutor, ServerThread


@pytest.fixture
def receiver(relay_settings):
    """The real app on a free port, with the executor seam recording the work handed over."""
    executor = RecordingExecutor()
    app = create_app(relay_settings, executor=executor)
    with ServerThread(app) as server:
        server.executor = executor
        server.settings = relay_settings
        server.drain = app.extensions["relay"]["journal"].drain  # the work after the answers given so far
        yield server
