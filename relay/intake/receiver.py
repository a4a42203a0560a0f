"""The webhook receiver: verify, bound, parse, decide, record durably, answer; the rest after the answer.

The acknowledgement costs one share of a group commit (relay.intake.journal), not a run record:
cancelling superseded runs and handing the delivery to the executor happen after the answer.

A Flask blueprint, like the dashboard's: ``create_app`` serves it alone; ``register_intake`` mounts it
in another app with its settings, policy and executor.
"""
from __future__ import annotations

import logging

from flask import Blueprint, Flask, current_app, jsonify, request
from sqlalchemy.exc import SQLAlchemyError

from relay.config import Settings
from relay.errors import UserError
from relay.intake.bounds import IntakeRefused, body_delivery_id, checked_headers, parse_payload
from relay.intake.deliveries import dedupe_key
from relay.intake.events import PayloadError, decide
from relay.intake.journal import Delivery, IntakeJournal
from relay.intake.policy import TriggerPolicy
from relay.intake.signature import signature_problem
from relay.intake.supersede import cancel_superseded_runs
from relay.storage import init_db
from relay.storage.event_states import EventStatus

log = logging.getLogger(__name__)
MAX_BODY = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
UNAVAILABLE = "the relay cannot store deliveries right now; redeliver later"


def _answer(code: int, **body):
    return jsonify(body), code


blueprint = Blueprint("intake", __name__)


def _relay() -> dict:
    return current_app.extensions["relay"]


@blueprint.get("/healthz")
def healthz():
    return _answer(200, status="ok")


@blueprint.post("/webhook/github")
def github_webhook():
    settings, policy, journal = _relay()["settings"], _relay()["policy"], _relay()["journal"]
    body = request.get_data(cache=False)  # the raw bytes GitHub signed; 413 past MAX_BODY
    problem = signature_problem(settings.webhook_secret, body, request.headers.get("X-Hub-Signature-256"))
    if problem:
        return _answer(401, error=problem)  # nothing stored, nothing run
    try:
        event_type, delivery_id = checked_headers(request.headers.get("X-GitHub-Event"),
                                                  request.headers.get("X-GitHub-Delivery"))
        payload = parse_payload(body, request.headers.get("Content-Type"))
        decision = decide(event_type, payload, policy)  # pure, microseconds: stored with the delivery
    except (IntakeRefused, PayloadError) as exc:  # nothing stored: the answer says what to fix
        log.info("webhook: refused %s delivery %s: %s", request.headers.get("X-GitHub-Event", "?")[:64],
                 (request.headers.get("X-GitHub-Delivery") or "-")[:64], exc)
        return _answer(getattr(exc, "status", 400), error=str(exc))
    status = EventStatus.QUEUED if decision.starts_work else EventStatus.IGNORED
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


# App-wide: a 405 is raised while routing, before any blueprint is chosen.
@blueprint.app_errorhandler(413)
def too_large(_error):
    return _answer(413, error=f"body exceeds {MAX_BODY // (1024 * 1024)} MB")


@blueprint.app_errorhandler(SQLAlchemyError)
def database_down(_error):  # logged once per outage by the journal
    return _answer(503, error=UNAVAILABLE)


@blueprint.app_errorhandler(TimeoutError)
def commit_timeout(_error):
    return _answer(503, error=UNAVAILABLE)


@blueprint.app_errorhandler(405)
def wrong_method(_error):
    return _answer(405, error=f"{request.method} is not allowed on {request.path}")


def register_intake(app: Flask, settings: Settings, *, executor, policy: TriggerPolicy | None = None) -> None:
    """Mount the receiver in ``app``, handing work to ``executor`` (anything with ``submit(event_id)``)."""
    if not settings.webhook_secret:
        raise UserError("no webhook secret configured", hint="set RELAY_WEBHOOK_SECRET or RELAY_WEBHOOK_SECRET_FILE")
    db_url = settings.resolved_database_url
    init_db(db_url)

    def after_answer(delivery: Delivery) -> None:
        # Here, not when the delivery is worked on: the run it supersedes may be the one executing.
        cancel_superseded_runs(db_url, delivery.event_type, delivery.payload, delivery.after)
        if delivery.after.starts_work:
            executor.submit(delivery.event_id)

    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.extensions["relay"] = {"settings": settings, "policy": policy or TriggerPolicy(), "executor": executor,
                               "journal": IntakeJournal(db_url, after_answer)}
    app.register_blueprint(blueprint)


def create_app(settings: Settings, *, executor, policy: TriggerPolicy | None = None) -> Flask:
    """The receiver alone; ``relay.intake.service.build_service`` adds the background thread and sweeper."""
    app = Flask(__name__)
    register_intake(app, settings, executor=executor, policy=policy)
    return app
