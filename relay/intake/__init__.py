"""Webhook relay: GitHub webhooks and CRCR repository_dispatch envelopes in, runs out."""
from relay.intake.receiver import create_app

__all__ = ["create_app"]
