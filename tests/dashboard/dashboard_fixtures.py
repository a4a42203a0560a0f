"""Fixtures shared by the dashboard's test modules (imported by name into each module)."""
from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from werkzeug.serving import make_server

from dashboard import create_app
from relay.config import Settings
from tests.dashboard.dashboard_seed import Seeded, seed_database


@pytest.fixture(scope="module")
def seeded(tmp_path_factory) -> Seeded:
    """A SQLite relay database with six finished runs, one queued run and the latest run's artifacts."""
    root = tmp_path_factory.mktemp("dashboard-db")
    return seed_database(f"sqlite:///{root / 'relay.db'}", output_root=root / "runs")


@pytest.fixture(scope="module")
def app(seeded):
    return create_app(Settings(database_url=seeded.url, api_token=None))


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture(scope="module")
def live_server(app) -> Iterator[str]:
    """The dashboard behind a real werkzeug server on a free port, in a thread."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(timeout=10)
