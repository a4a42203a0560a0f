"""Write actions over HTTP: cancel a run, or start it again.

They change what the relay does, so they always need ``Authorization: Bearer <RELAY_API_TOKEN>``:
without a configured token they are switched off (403), whatever the read API allows.
A re-run executes in this process's background thread, as the webhook relay's runs do
(its shards go to Celery workers when the run's executor is celery).
"""
from __future__ import annotations

from flask import Blueprint, abort, current_app, jsonify, request

from dashboard.api import check_bearer
from dashboard.queries import NotFound
from relay.config import Settings
from relay.errors import UserError
from relay.runs import control as run_control
from relay.runs.states import RunStatus
from relay.storage import Run, session_scope

blueprint = Blueprint("actions", __name__)


def execute(settings: Settings, run_id: str) -> None:
    """Run a re-run to its end (in the app's background thread)."""
    from relay.runs.pipeline import execute_run  # the runner: loaded on the first re-run, not at start

    execute_run(settings, run_id)


@blueprint.before_request
def require_write_token():
    token = current_app.config.get("RELAY_API_TOKEN")
    if not token:
        abort(403, description="write actions are switched off: set RELAY_API_TOKEN to enable them")
    check_bearer(token)


def _status_of(run_id: str) -> str:
    with session_scope(current_app.config["RELAY_DATABASE_URL"]) as session:
        run = session.get(Run, run_id)
        if run is None:
            raise NotFound(f"no run with id {run_id!r}")
        return run.status


@blueprint.post("/runs/<run_id>/cancel")
def cancel(run_id: str):
    status = _status_of(run_id)
    reason = f"cancelled through the dashboard API from {request.remote_addr}"
    if not run_control.cancel_run(current_app.config["RELAY_DATABASE_URL"], run_id, reason):
        abort(409, description=f"run {run_id} is {_status_of(run_id)}: only a queued, selecting or running "
                               f"run can be cancelled")
    return jsonify({"id": run_id, "status": RunStatus.CANCELLED, "was": status})


@blueprint.post("/runs/<run_id>/rerun")
def rerun(run_id: str):
    _status_of(run_id)
    settings = current_app.config["RELAY_SETTINGS"]
    try:
        new_id = run_control.rerun(settings, run_id)
    except UserError as exc:  # what the run asked for is gone (its rules path, say)
        abort(409, description=f"cannot re-run {run_id}: {exc}")
    current_app.extensions["relay_runs"].submit(new_id)
    return jsonify({"id": new_id, "status": RunStatus.QUEUED, "rerun_of": run_id, "url": f"/api/runs/{new_id}"}), 202
