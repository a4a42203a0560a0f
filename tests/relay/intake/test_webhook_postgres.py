"""The delivery claim on PostgreSQL, as deployed: concurrent redeliveries start one piece of work."""
from __future__ import annotations

import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from relay.intake import create_app
from relay.storage import Event, session_scope
from tests.relay.intake.webhook_helpers import RecordingExecutor, ServerThread, post_event, upstream_pr


@pytest.mark.integration
def test_fifty_concurrent_redeliveries_claim_once_on_postgres(relay_settings, postgres_url):
    settings = relay_settings.model_copy(update={"database_url": postgres_url})
    executor = RecordingExecutor()
    delivery = f"pg-storm-{uuid.uuid4().hex}"
    payload = upstream_pr("pull_request.synchronize")
    app = create_app(settings, executor=executor)
    with ServerThread(app) as server:
        with ThreadPoolExecutor(max_workers=16) as pool:
            answers = list(pool.map(lambda _: post_event(server.url, "pull_request", payload, delivery=delivery),
                                    range(50)))
    app.extensions["relay"]["journal"].drain()  # the hand-over happens after the answer
    assert sorted(a.status_code for a in answers) == [200] * 49 + [202]
    with session_scope(postgres_url) as session:
        [event] = session.query(Event).filter_by(delivery_id=delivery).all()
        assert event.status == "queued"
    assert executor.submitted == [event.id]
