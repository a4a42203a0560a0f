"""WSGI entry point for the webhook relay: ``waitress-serve relay.intake.wsgi:app`` or ``gunicorn relay.intake.wsgi:app``.

Settings come from the RELAY_* environment (and relay.yaml), the trigger policy from
RELAY_TRIGGER_POLICY. The app is built on first access, so importing this module is cheap.
"""
from __future__ import annotations

from functools import lru_cache

from flask import Flask


@lru_cache(maxsize=1)
def create() -> Flask:
    from relay.config import load_settings
    from relay.intake.policy import load_policy
    from relay.intake.service import build_service
    from relay.redaction import install_log_filter

    settings = load_settings()
    install_log_filter()
    service = build_service(settings, load_policy(settings.trigger_policy))
    service.start_sweeping()
    return service.app


def __getattr__(name: str):
    if name == "app":
        return create()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
