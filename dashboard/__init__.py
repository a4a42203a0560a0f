"""The dashboard: server-rendered pages and a JSON API over the relay's runs, selections and results.

``create_app`` serves it alone (``relay-cli dashboard``); ``register_dashboard`` mounts the same
blueprints in another Flask app (the webhook relay) that already has a database URL configured.
"""
from __future__ import annotations

from flask import Flask

from relay.config import Settings, load_settings


def register_dashboard(app: Flask, database_url: str, api_token: str | None = None) -> None:
    from dashboard import api, errors, pages
    from dashboard.db import close_session

    app.config["RELAY_DATABASE_URL"] = database_url
    app.config["RELAY_API_TOKEN"] = api_token or None
    app.register_blueprint(pages.blueprint)
    app.register_blueprint(api.blueprint, url_prefix="/api")
    errors.register(app)
    app.teardown_appcontext(close_session)


def create_app(settings: Settings | None = None, *, database_url: str | None = None,
               api_token: str | None = None) -> Flask:
    """An app for the database in ``settings`` (default: flags/env/relay.yaml via load_settings).

    The schema is not created here: ``relay-cli dashboard`` runs ``init_db`` first, tests seed with it."""
    settings = settings or load_settings()
    app = Flask(__name__)
    app.json.sort_keys = False  # keep the documented field order in API responses
    register_dashboard(app, database_url or settings.resolved_database_url,
                       api_token if api_token is not None else settings.api_token)
    return app
