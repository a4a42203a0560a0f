"""What a delivery may look like before anything is stored: header lengths, content type, JSON depth.

Every refusal is an ``IntakeRefused`` carrying the HTTP status and a message that names the limit
or the problem; the receiver answers with it and stores nothing.
"""
from __future__ import annotations

import hashlib
import json
from urllib.parse import parse_qs

MAX_DEPTH = 32  # GitHub's payloads nest 5 levels, a CRCR envelope 7: 32 leaves room and stops abuse
MAX_DELIVERY_ID = 128  # the events.delivery_id column; GitHub sends a 36-character GUID
MAX_EVENT_TYPE = 64  # the events.event_type column; GitHub's longest event name has 42
JSON_TYPES = ("", "application/json")
FORM_TYPE = "application/x-www-form-urlencoded"


class IntakeRefused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def checked_headers(event_type: str | None, delivery_id: str | None) -> tuple[str, str | None]:
    """The event type and delivery id headers, refused when missing (event) or too long."""
    if not event_type:
        raise IntakeRefused(400, "missing X-GitHub-Event header")
    if len(event_type) > MAX_EVENT_TYPE:
        raise IntakeRefused(400, f"X-GitHub-Event is {len(event_type)} characters; the limit is {MAX_EVENT_TYPE}")
    if delivery_id is not None and len(delivery_id) > MAX_DELIVERY_ID:
        raise IntakeRefused(400, f"X-GitHub-Delivery is {len(delivery_id)} characters; the limit is "
                                 f"{MAX_DELIVERY_ID}")
    return event_type, (delivery_id.strip() or None) if delivery_id else None


def body_delivery_id(body: bytes) -> str:
    """A stable id for a delivery sent without X-GitHub-Delivery: the same body repeated is the same delivery."""
    return "sha256:" + hashlib.sha256(body).hexdigest()


def parse_payload(body: bytes, content_type: str | None) -> dict:
    """The JSON object in ``body``, sent as GitHub sends it: raw JSON, or form-encoded in a ``payload`` field."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in JSON_TYPES or media.endswith("+json"):
        text: bytes | str = body
    elif media == FORM_TYPE:
        text = _form_payload(body)
    else:
        raise IntakeRefused(415, f"content type '{media}' is not accepted: send application/json, or "
                                 f"{FORM_TYPE} with the JSON in a 'payload' field")
    try:
        payload = json.loads(text)
    except RecursionError:
        raise IntakeRefused(400, f"JSON nested deeper than {MAX_DEPTH} levels (the limit)") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise IntakeRefused(400, f"body is not valid JSON ({media or 'no content type'}): {exc}") from None
    if not isinstance(payload, dict):
        raise IntakeRefused(400, f"expected a JSON object, got {type(payload).__name__}")
    if nesting_depth(payload, MAX_DEPTH) > MAX_DEPTH:
        raise IntakeRefused(400, f"JSON nested deeper than {MAX_DEPTH} levels (the limit)")
    return payload


def _form_payload(body: bytes) -> str:
    try:
        fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False, max_num_fields=100)
    except (UnicodeDecodeError, ValueError) as exc:
        raise IntakeRefused(400, f"form-encoded body cannot be read: {exc}") from None
    values = fields.get("payload")
    if not values:
        raise IntakeRefused(400, f"{FORM_TYPE} delivery without a 'payload' field (GitHub puts the JSON there)")
    return values[0]


def nesting_depth(value, limit: int) -> int:
    """How deep containers nest in ``value``, counting stops just past ``limit`` (iterative: no recursion)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > deepest:
            deepest = depth
            if deepest > limit:
                return deepest
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest
