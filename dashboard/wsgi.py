"""WSGI entry point for the dashboard: ``gunicorn dashboard.wsgi:app``.

Settings come from the RELAY_* environment; the schema is brought up to date first, as
``relay-cli dashboard`` does, so a fresh PostgreSQL works.
"""
from dashboard import create_app
from relay.config import load_settings
from relay.storage import init_db

_settings = load_settings()
init_db(_settings.resolved_database_url)
app = create_app(_settings)
