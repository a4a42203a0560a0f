"""Leases: who owns a piece of work (a delivery, a run's shard) and until when, renewed by heartbeats.

A lease is a row ``(name, owner, expires_at)``. Taking it is one conditional statement, so of
several relays, sweepers or workers exactly one gets it: an INSERT when nobody ever held it, else
an UPDATE that succeeds only when the lease has expired (its owner stopped heartbeating: killed,
hung, partitioned) or is already ours. ``Heartbeat`` renews every lease a process holds a few
times per lease period; a process that dies stops renewing, and its work is free to take once the
period has passed: that period is the takeover bound (``Settings.takeover_seconds``).
"""
from __future__ import annotations

import datetime as dt
import logging
import os
import socket
import threading
import uuid

from sqlalchemy import delete, select, update
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from relay.storage.db import session_scope
from relay.storage.models import Lease, utcnow

log = logging.getLogger(__name__)
_owner: tuple[int, str] | None = None


def owner_id() -> str:
    """This process's name as a lease owner (a forked child gets its own)."""
    global _owner
    if _owner is None or _owner[0] != os.getpid():
        _owner = (os.getpid(), f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}")
    return _owner[1]


def acquire(db_url: str, name: str, ttl: float, owner: str | None = None) -> bool:
    """Take (or renew) lease ``name`` for ``ttl`` seconds; False when another owner holds it unexpired."""
    owner = owner or owner_id()
    now = utcnow()
    expires = now + dt.timedelta(seconds=ttl)
    with session_scope(db_url) as session:
        taken = session.execute(update(Lease).where(Lease.name == name, (Lease.expires_at < now)
                                                    | (Lease.owner == owner))
                                .values(owner=owner, expires_at=expires, taken_at=now))
        if taken.rowcount == 1:
            return True
    try:
        with session_scope(db_url) as session:
            session.add(Lease(name=name, owner=owner, expires_at=expires, taken_at=now))
        return True
    except IntegrityError:  # someone holds it (or took it between the two statements)
        return False


def release(db_url: str, name: str, owner: str | None = None) -> None:
    with session_scope(db_url) as session:
        session.execute(delete(Lease).where(Lease.name == name, Lease.owner == (owner or owner_id())))


def renew(db_url: str, names: set[str], ttl: float, owner: str | None = None) -> int:
    """Push the expiry of ``owner``'s leases among ``names``; returns how many are still ours."""
    if not names:
        return 0
    with session_scope(db_url) as session:
        renewed = session.execute(update(Lease).where(Lease.name.in_(names), Lease.owner == (owner or owner_id()))
                                  .values(expires_at=utcnow() + dt.timedelta(seconds=ttl)))
        return renewed.rowcount


def live_holder(db_url: str, name: str) -> str | None:
    """The owner holding ``name`` unexpired, or None."""
    with session_scope(db_url) as session:
        return session.scalar(select(Lease.owner).where(Lease.name == name, Lease.expires_at >= utcnow()))


def held_names(db_url: str, prefix: str) -> set[str]:
    """Names starting with ``prefix`` whose lease is unexpired."""
    with session_scope(db_url) as session:
        return set(session.scalars(select(Lease.name).where(Lease.name.startswith(prefix, autoescape=True),
                                                            Lease.expires_at >= utcnow())))


def expired_names(db_url: str, prefix: str) -> set[str]:
    """Names starting with ``prefix`` whose owner stopped renewing them."""
    with session_scope(db_url) as session:
        return set(session.scalars(select(Lease.name).where(Lease.name.startswith(prefix, autoescape=True),
                                                            Lease.expires_at < utcnow())))


class Heartbeat:
    """Renews the leases this process holds every ``ttl / 3`` seconds, in a daemon thread."""

    def __init__(self, db_url: str, ttl: float) -> None:
        self.db_url, self.ttl = db_url, ttl
        self._names: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._failing = False
        self._thread = threading.Thread(target=self._loop, name="lease-heartbeat", daemon=True)
        self._thread.start()

    def hold(self, name: str) -> None:
        with self._lock:
            self._names.add(name)

    def drop(self, name: str) -> None:
        with self._lock:
            self._names.discard(name)

    def _loop(self) -> None:
        while not self._stop.wait(self.ttl / 3):
            with self._lock:
                names = set(self._names)
            try:
                renew(self.db_url, names, self.ttl)
            except SQLAlchemyError as exc:  # logged once per outage; the leases may lapse meanwhile
                if not self._failing:
                    log.error("leases: database unreachable, cannot renew %d lease(s): %s", len(names),
                              str(getattr(exc, "orig", exc)).strip().splitlines()[0])
                self._failing = True
                continue
            if self._failing:
                log.info("leases: database reachable again, %d lease(s) renewed", len(names))
                self._failing = False

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
