"""The JSON API: one endpoint behind every page, same filters, paginated (see openapi.yaml)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from flask import Blueprint, abort, current_app, jsonify, request
from sqlalchemy.exc import OperationalError

from dashboard import filters, queries
from dashboard.auth import bearer_ok
from dashboard.db import get_session
from dashboard.params import PageRequest

blueprint = Blueprint("api", __name__)
OPENAPI = Path(__file__).with_name("openapi.yaml")
PUBLIC_ENDPOINTS = {"api.openapi"}


@blueprint.before_request
def require_token():
    """With RELAY_API_TOKEN set, every API call but the spec needs ``Authorization: Bearer <token>``."""
    token = current_app.config.get("RELAY_API_TOKEN")
    if token and request.endpoint not in PUBLIC_ENDPOINTS:
        check_bearer(token)


def check_bearer(token: str) -> None:
    """401 unless the request carries ``Authorization: Bearer <token>`` (compared in constant time)."""
    if not bearer_ok(token):
        abort(401, description="missing or wrong bearer token (send Authorization: Bearer <RELAY_API_TOKEN>)")


@lru_cache(maxsize=1)
def openapi_document() -> dict:
    return yaml.safe_load(OPENAPI.read_text())


@blueprint.get("/openapi.json")
def openapi():
    return jsonify(openapi_document())


@blueprint.get("/runs")
def runs():
    return jsonify(queries.list_runs(get_session(), PageRequest.from_args(request.args),
                                     **filters.run_list_filters(request.args)))


@blueprint.get("/runs/<run_id>")
def run(run_id: str):
    return jsonify(queries.get_run(get_session(), run_id))


@blueprint.get("/runs/<run_id>/results")
def run_results(run_id: str):
    return jsonify(queries.run_results(get_session(), run_id, PageRequest.from_args(request.args),
                                       **filters.result_filters(request.args)))


@blueprint.get("/runs/<run_id>/files")
def run_files(run_id: str):
    return jsonify({"items": queries.run_files(get_session(), run_id)})


@blueprint.get("/runs/<run_id>/explanations")
def run_explanations(run_id: str):
    return jsonify(queries.run_explanations(get_session(), run_id, PageRequest.from_args(request.args),
                                            **filters.explanation_filters(request.args)))


@blueprint.get("/tests/history")
def test_history():
    return jsonify(queries.test_history(get_session(), filters.required_test_id(request.args),
                                        PageRequest.from_args(request.args)))


@blueprint.get("/matrix")
def matrix():
    return jsonify(queries.matrix(get_session(), **filters.matrix_filters(request.args)))


@blueprint.get("/trends")
def trends():
    return jsonify(queries.trends(get_session(), **filters.trend_filters(request.args)))


@blueprint.get("/health")
def health():
    """503 with ``reachable: false`` when the database is gone, so a probe can tell."""
    try:
        return jsonify(queries.health(get_session()))
    except OperationalError as exc:
        return jsonify(queries.database_unreachable(exc)), 503
