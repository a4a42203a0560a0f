"""The dashboard: server-rendered pages and a JSON API over the relay's runs, selections and results.

``create_app`` serves it alone (``relay-cli dashboard``); ``register_dashboard`` mounts the same
blueprints in another Flask app (the webhook relay, say) for the given settings.
"""
from __future__ import annotations

from flask import Flask

from relay.config import Settings, load_settings


def register_dashboard(app: Flask, settings: Settings) -> None:
    """Mount pages, the read API and the write actions for ``settings``' database and API token."""
    from dashboard import actions, api, auth, errors, pages
    from dashboard.db import close_session
    from relay.intake.background import BackgroundThread

    app.config["RELAY_SETTINGS"] = settings
    app.config["RELAY_DATABASE_URL"] = settings.resolved_database_url
    app.config["RELAY_API_TOKEN"] = settings.api_token or None
    app.extensions["relay_runs"] = BackgroundThread(lambda run_id: actions.execute(settings, run_id))
    app.register_blueprint(pages.blueprint)
    app.register_blueprint(auth.blueprint)
    app.register_blueprint(api.blueprint, url_prefix="/api")
    app.register_blueprint(actions.blueprint, url_prefix="/api")
    errors.register(app)
    app.teardown_appcontext(close_session)


def create_app(settings: Settings | None = None, *, database_url: str | None = None,
               api_token: str | None = None) -> Flask:
    """An app for the database in ``settings`` (default: flags/env/relay.yaml via load_settings).

    The schema is not created here: ``relay-cli dashboard`` runs ``init_db`` first, tests seed with it."""
    settings = settings or load_settings()
    app = Flask(__name__)
    app.json.sort_keys = False  # keep the documented field order in API responses
    overrides = {"database_url": database_url, "api_token": api_token}
    register_dashboard(app, settings.model_copy(update={k: v for k, v in overrides.items() if v is not None}))
    return app
