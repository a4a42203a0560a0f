"""A delivery's states: the one list of ``events.status``, and what counts as unfinished.

Stored as plain strings (``EventStatus`` is a ``StrEnum``, so a member equals its string). The
home is storage, beside the ``Event`` row, because two parts move an event: the intake (received,
decided, processed) and the sweeper in ``relay.runs`` (taking over an abandoned one), and runs may
not import the intake.
"""
from __future__ import annotations

import enum


class EventStatus(enum.StrEnum):
    RECEIVED = "received"  # stored, not decided yet
    IGNORED = "ignored"  # decided: nothing to run (the note says why)
    QUEUED = "queued"  # accepted; its work is waiting or under way
    REQUEUED = "requeued"  # its owner stopped; the sweeper handed it to this relay
    PROCESSED = "processed"  # its run was executed and reported
    FAILED = "failed"  # no run could be created (the note says why)


# Accepted, its work not done: the sweeper takes these over when their owner stops.
UNFINISHED = frozenset({EventStatus.QUEUED, EventStatus.REQUEUED})
