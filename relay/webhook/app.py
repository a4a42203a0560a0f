"""The webhook receiver: verify, bound, parse, decide, record durably, answer; the rest after the answer.

The acknowledgement costs one share of a group commit (relay.webhook.journal), not a run record:
cancelling superseded runs and handing the delivery to the executor happen after the answer.
"""
from __future__ import annotations

import logging
from pathlib import Path

from flask import Flask, jsonify, request
from sqlalchemy.exc import SQLAlchemyError

from relay.config import Settings
from relay.errors import UserError
from relay.storage import init_db
from relay.webhook.bounds import IntakeRefused, body_delivery_id, checked_headers, parse_payload
from relay.webhook.events import PayloadError, decide
from relay.webhook.journal import Delivery, IntakeJournal
from relay.webhook.policy import TriggerPolicy
from relay.webhook.signature import signature_problem
from relay.webhook.store import dedupe_key
from relay.webhook.worker import cancel_superseded_runs

log = logging.getLogger(__name__)
MAX_BODY = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB


def _answer(code: int, **body):
    return jsonify(body), code


def create_app(settings: Settings, *, executor, policy: TriggerPolicy | None = None) -> Flask:
    """The receiver for ``settings``, handing work to ``executor`` (anything with ``submit(event_id)``).

    ``relay.webhook.service.build_service`` assembles it with the background thread and sweeper.
    """
    if not settings.webhook_secret:
        raise UserError("no webhook secret configured", hint="set RELAY_WEBHOOK_SECRET or RELAY_WEBHOOK_SECRET_FILE")
    policy = policy or TriggerPolicy()
    db_url = settings.resolved_database_url
    init_db(db_url)

    def after_commit(delivery: Delivery) -> None:
        decision = delivery.after
        # Here, not when the delivery is worked on: the run it supersedes may be the one executing.
        cancel_superseded_runs(db_url, delivery.event_type, delivery.payload, decision)
        if decision.starts_work:
            executor.submit(delivery.event_id)

    journal = IntakeJournal(db_url, after_commit)

    # root_path given: under pytest, tests/relay/ can make `relay` a namespace package Flask cannot locate.
    app = Flask(__name__, root_path=str(Path(__file__).parent))
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.extensions["relay"] = {"settings": settings, "policy": policy, "executor": executor, "journal": journal}

    @app.get("/healthz")
    def healthz():
        return _answer(200, status="ok")

    @app.post("/webhook/github")
    def github_webhook():
        body = request.get_data(cache=False)  # the raw bytes GitHub signed; 413 past MAX_BODY
        problem = signature_problem(settings.webhook_secret, body, request.headers.get("X-Hub-Signature-256"))
        if problem:
            return _answer(401, error=problem)  # nothing stored, nothing run
        try:
            event_type, delivery_id = checked_headers(request.headers.get("X-GitHub-Event"),
                                                      request.headers.get("X-GitHub-Delivery"))
            payload = parse_payload(body, request.headers.get("Content-Type"))
            decision = decide(event_type, payload, policy)  # pure, microseconds: stored with the delivery
        except IntakeRefused as exc:
            log.info("webhook: refused %s delivery %s: %s", request.headers.get("X-GitHub-Event", "?")[:64],
                     (request.headers.get("X-GitHub-Delivery") or "-")[:64], exc)
            return _answer(exc.status, error=str(exc))
        except PayloadError as exc:
            log.info("webhook: refused %s delivery %s: %s", event_type, delivery_id or "-", exc)
            return _answer(400, error=str(exc))
        status = "queued" if decision.starts_work else "ignored"
        claim = journal.record(Delivery(
            source="crcr" if event_type == "repository_dispatch" else "github", event_type=event_type,
            delivery_id=dedupe_key(event_type, delivery_id, payload) or body_delivery_id(body), payload=payload,
            status=status, note=decision.reason, after=decision))
        if claim.duplicate:
            return _answer(200, status="duplicate", event_id=claim.event_id,
                           note=f"delivery already received (event is {claim.status})")
        log.info("event %s %s: %s (%s)", claim.event_id, event_type, status, decision.reason)
        if decision.action == "pong":
            return _answer(200, status="pong", event_id=claim.event_id)
        return _answer(202, status=status, reason=decision.reason, event_id=claim.event_id)

    @app.errorhandler(413)
    def too_large(_error):
        return _answer(413, error=f"body exceeds {MAX_BODY // (1024 * 1024)} MB")

    @app.errorhandler(SQLAlchemyError)
    def database_down(_error):  # logged once per outage by the journal
        return _answer(503, error="the relay cannot store deliveries right now; redeliver later")

    @app.errorhandler(TimeoutError)
    def commit_timeout(_error):
        return _answer(503, error="the relay cannot store deliveries right now; redeliver later")

    @app.errorhandler(405)
    def wrong_method(_error):
        return _answer(405, error=f"{request.method} is not allowed on {request.path}")

    return app
