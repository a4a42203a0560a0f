"""A report's delivery states: the one list of ``reports.status`` and which ones are sent again.

Stored as plain strings (``ReportStatus`` is a ``StrEnum``, so a member equals its string).
``relay.reporting.reports`` moves a report between them; the sweeper retries the unsent ones.
"""
from __future__ import annotations

import enum


class ReportStatus(enum.StrEnum):
    PENDING = "pending"  # recorded, its first send not finished
    SENT = "sent"  # the receiver took it
    FAILED = "failed"  # the send failed in a way worth retrying (down, 429, 5xx)
    REJECTED = "rejected"  # the receiver refused it for good
    SUPERSEDED = "superseded"  # an in_progress report its run's completion overtook: never sent late


# Not sent yet, and worth sending (again): what the sweeper retries.
UNSENT = frozenset({ReportStatus.PENDING, ReportStatus.FAILED})
