"""One read session per request, closed when the request ends."""
from __future__ import annotations

from flask import current_app, g
from sqlalchemy.orm import Session, sessionmaker

from relay.storage import make_engine


def get_session() -> Session:
    if "dashboard_session" not in g:
        factory = sessionmaker(make_engine(current_app.config["RELAY_DATABASE_URL"]))
        g.dashboard_session = factory()
    return g.dashboard_session


def close_session(_error: BaseException | None = None) -> None:
    session = g.pop("dashboard_session", None)
    if session is not None:
        session.close()
