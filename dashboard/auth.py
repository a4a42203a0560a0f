"""The API token on pages: what shows configuration or errors needs it when RELAY_API_TOKEN is set.

The API takes ``Authorization: Bearer <token>``; a browser signs in once at ``/login`` with the
same token and carries it in an HttpOnly cookie. Without a configured token everything is open
(the embedded default, a maintainer's laptop).
"""
from __future__ import annotations

import hmac
from functools import wraps

from flask import Blueprint, abort, current_app, redirect, render_template, request, url_for

blueprint = Blueprint("auth", __name__, template_folder="templates")
COOKIE = "relay_api_token"


def configured_token() -> str | None:
    return current_app.config.get("RELAY_API_TOKEN")


def _matches(given: str, token: str) -> bool:
    return hmac.compare_digest(given.strip().encode(), token.encode())


def bearer_ok(token: str) -> bool:
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and _matches(given, token)


def authorized() -> bool:
    """True without a configured token, or when the request carries it (bearer header or sign-in cookie)."""
    token = configured_token()
    return not token or bearer_ok(token) or _matches(request.cookies.get(COOKIE, ""), token)


def token_required(view):
    """A page that shows configuration or errors: 401 with a sign-in link unless ``authorized()``."""
    @wraps(view)
    def guarded(*args, **kwargs):
        if not authorized():
            abort(401, description="this page shows the relay's configuration and errors: sign in with the "
                                   "API token (RELAY_API_TOKEN) at /login, or send Authorization: Bearer <token>")
        return view(*args, **kwargs)
    return guarded


@blueprint.route("/login", methods=["GET", "POST"])
def login():
    target = request.values.get("next") or url_for("pages.runs")
    if not target.startswith("/") or target.startswith("//"):  # never redirect off-site
        target = url_for("pages.runs")
    token = configured_token()
    if request.method == "GET" or not token:
        return render_template("login.html", next=target, wrong=False, needed=bool(token))
    if not _matches(request.form.get("token", ""), token):
        return render_template("login.html", next=target, wrong=True, needed=True), 401
    response = redirect(target)
    response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", secure=request.is_secure)
    return response
