"""Webhook relay: GitHub webhooks and CRCR repository_dispatch envelopes in, runs out."""
from relay.webhook.app import create_app

__all__ = ["create_app"]
