"""Errors as the reader expects them: JSON under /api (naming the bad parameter), an HTML page elsewhere."""
from __future__ import annotations

from flask import Flask, jsonify, render_template, request
from sqlalchemy.exc import OperationalError
from werkzeug.exceptions import HTTPException

from dashboard.params import BadParam
from dashboard.queries import NotFound


def wants_json() -> bool:
    return request.path == "/api" or request.path.startswith("/api/")


def error_response(status: int, message: str, **extra):
    if wants_json():
        response = jsonify({"error": {"status": status, "message": message, **extra}})
        response.status_code = status
        return response
    return render_template("error.html", status=status, message=message), status


def register(app: Flask) -> None:
    @app.errorhandler(BadParam)
    def bad_param(exc: BadParam):
        return error_response(400, str(exc), parameter=exc.parameter)

    @app.errorhandler(NotFound)
    def not_found(exc: NotFound):
        return error_response(404, str(exc))

    @app.errorhandler(OperationalError)
    def database_down(exc: OperationalError):
        app.logger.warning("database unreachable: %s", exc.orig)
        return error_response(503, "the relay database cannot be reached; check RELAY_DATABASE_URL")

    @app.errorhandler(HTTPException)
    def http_error(exc: HTTPException):
        response = error_response(exc.code or 500, exc.description or exc.name)
        if exc.code == 401 and wants_json():
            response.headers["WWW-Authenticate"] = 'Bearer realm="relay"'
        return response
