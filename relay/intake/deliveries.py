"""Deliveries persisted before anything else, each delivery id claimed exactly once.

The claim is the database's unique constraint on ``events.delivery_id``: of many concurrent
redeliveries exactly one INSERT succeeds, on SQLite and PostgreSQL alike.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError

from relay.storage import Event, session_scope
from relay.storage.event_states import EventStatus


@dataclass(frozen=True)
class Claim:
    event_id: str
    duplicate: bool
    status: EventStatus  # the existing event's status when duplicate


def dedupe_key(event_type: str, delivery_id: str | None, payload: dict | None) -> str | None:
    """The key a redelivery repeats.

    A CRCR envelope is keyed by CRCR's ``delivery_id`` (the upstream delivery), so CRCR
    dispatching one upstream event twice (its known redelivery gap) still starts one run.
    """
    if event_type == "repository_dispatch" and isinstance(payload, dict):
        inner = payload.get("client_payload")
        if isinstance(inner, dict) and isinstance(inner.get("delivery_id"), str) and inner["delivery_id"]:
            return f"crcr:{inner['delivery_id'][:100]}"
    return delivery_id[:128] if delivery_id else None


def claim_delivery(db_url: str, *, source: str, event_type: str, delivery_id: str | None,
                   payload: dict, status: EventStatus = EventStatus.RECEIVED, note: str | None = None) -> Claim:
    try:
        with session_scope(db_url) as session:
            event = Event(source=source, event_type=event_type[:64], delivery_id=delivery_id,
                          payload=payload, status=status, note=note)
            session.add(event)
            session.flush()
            return Claim(event.id, False, status)
    except IntegrityError:
        with session_scope(db_url) as session:
            existing = session.query(Event).filter_by(delivery_id=delivery_id).one()
            return Claim(existing.id, True, existing.status)


def mark_event(db_url: str, event_id: str, status: EventStatus, note: str | None = None,
               run_id: str | None = None) -> None:
    with session_scope(db_url) as session:
        event = session.get(Event, event_id)
        event.status = status
        if note is not None:
            event.note = note
        if run_id is not None:
            event.run_id = run_id
