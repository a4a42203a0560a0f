"""GitHub's webhook signature: ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, raw body)>``."""
from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(secret: str, body: bytes) -> str:
    """The header value GitHub sends for ``body``."""
    return PREFIX + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def signature_problem(secret: str, body: bytes, header: str | None) -> str | None:
    """None when ``header`` signs ``body``; otherwise what is wrong, for the 401 answer.

    The comparison is constant-time so the answer's timing tells nothing about the secret.
    """
    if not header:
        return "missing X-Hub-Signature-256 header"
    if not header.startswith(PREFIX):
        return "X-Hub-Signature-256 must be 'sha256=<hex digest>'"
    if not hmac.compare_digest(sign(secret, body).encode(), header.strip().encode()):
        return "X-Hub-Signature-256 does not match the body (wrong secret or altered payload)"
    return None
