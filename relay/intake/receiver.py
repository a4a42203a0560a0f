"""The webhook receiver: verify, persist, decide, enqueue, answer 202, all within the request's milliseconds.

A Flask blueprint, like the dashboard's: ``create_app`` serves it alone; ``register_intake`` mounts it
in another app with its settings, policy and executor.
"""
from __future__ import annotations

import json
import logging
from pathlib import Path

from flask import Blueprint, Flask, current_app, jsonify, request
from sqlalchemy.exc import SQLAlchemyError

from relay.config import Settings
from relay.errors import UserError
from relay.intake.deliveries import claim_delivery, dedupe_key
from relay.intake.events import PayloadError, decide
from relay.intake.policy import TriggerPolicy
from relay.intake.signature import signature_problem
from relay.intake.supersede import cancel_superseded_runs
from relay.storage import init_db

log = logging.getLogger(__name__)
MAX_BODY = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB


def _answer(code: int, **body):
    return jsonify(body), code


def _status_of(decision, problem: str | None) -> tuple[str, str | None]:
    if decision is None:
        return "failed", problem
    return ("queued" if decision.starts_work else "ignored"), decision.reason


blueprint = Blueprint("intake", __name__)


def _relay() -> dict:
    return current_app.extensions["relay"]


@blueprint.get("/healthz")
def healthz():
    return _answer(200, status="ok")


@blueprint.post("/webhook/github")
def github_webhook():
    settings, policy, executor = _relay()["settings"], _relay()["policy"], _relay()["executor"]
    db_url = settings.resolved_database_url
    body = request.get_data(cache=False)  # the raw bytes GitHub signed; 413 past MAX_BODY
    problem = signature_problem(settings.webhook_secret, body, request.headers.get("X-Hub-Signature-256"))
    if problem:
        return _answer(401, error=problem)  # nothing stored, nothing run
    event_type = request.headers.get("X-GitHub-Event", "")
    delivery_id = request.headers.get("X-GitHub-Delivery")
    if not event_type:
        return _answer(400, error="missing X-GitHub-Event header")
    try:
        payload = json.loads(body)
        if not isinstance(payload, dict):
            raise ValueError(f"expected a JSON object, got {type(payload).__name__}")
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        claim_delivery(db_url, source="github", event_type=event_type, delivery_id=delivery_id, payload={},
                       status="failed", note=f"malformed JSON: {exc}")
        return _answer(400, error=f"body is not valid JSON: {exc}")

    # Deciding is pure and takes microseconds, so the delivery is stored once, with its decision.
    try:
        decision, problem = decide(event_type, payload, policy), None
    except PayloadError as exc:
        decision, problem = None, str(exc)
    status, note = _status_of(decision, problem)
    claim = claim_delivery(db_url, source="crcr" if event_type == "repository_dispatch" else "github",
                           event_type=event_type, delivery_id=dedupe_key(event_type, delivery_id, payload),
                           payload=payload, status=status, note=note)
    if claim.duplicate:
        return _answer(200, status="duplicate", event_id=claim.event_id,
                       note=f"delivery already received (event is {claim.status})")
    if decision is None:
        return _answer(400, error=problem, event_id=claim.event_id)
    # Here, not when the delivery is worked on: the run it supersedes may be the one executing.
    cancel_superseded_runs(db_url, event_type, payload, decision)
    if decision.action == "pong":
        return _answer(200, status="pong", event_id=claim.event_id)
    if not decision.starts_work:
        return _answer(202, status="ignored", reason=decision.reason, event_id=claim.event_id)
    executor.submit(claim.event_id)
    return _answer(202, status="queued", reason=decision.reason, event_id=claim.event_id)


# App-wide: a 405 is raised while routing, before any blueprint is chosen.
@blueprint.app_errorhandler(413)
def too_large(_error):
    return _answer(413, error=f"body exceeds {MAX_BODY // (1024 * 1024)} MB")


@blueprint.app_errorhandler(SQLAlchemyError)
def database_down(error):
    log.error("webhook: database error: %s", error)
    return _answer(503, error="the relay cannot store deliveries right now; redeliver later")


@blueprint.app_errorhandler(405)
def wrong_method(_error):
    return _answer(405, error=f"{request.method} is not allowed on {request.path}")


def register_intake(app: Flask, settings: Settings, *, executor, policy: TriggerPolicy | None = None) -> None:
    """Mount the receiver in ``app``, handing work to ``executor`` (anything with ``submit(event_id)``)."""
    if not settings.webhook_secret:
        raise UserError("no webhook secret configured", hint="set RELAY_WEBHOOK_SECRET or RELAY_WEBHOOK_SECRET_FILE")
    init_db(settings.resolved_database_url)
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.extensions["relay"] = {"settings": settings, "policy": policy or TriggerPolicy(), "executor": executor}
    app.register_blueprint(blueprint)


def create_app(settings: Settings, *, executor, policy: TriggerPolicy | None = None) -> Flask:
    """The receiver alone; ``relay.intake.service.build_service`` adds the background thread and sweeper."""
    # root_path given: under pytest, tests/relay/ can make `relay` a namespace package Flask cannot locate.
    app = Flask(__name__, root_path=str(Path(__file__).parent))
    register_intake(app, settings, executor=executor, policy=policy)
    return app
