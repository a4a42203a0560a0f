"""A run's states: the one list, and the groups every part asks about.

Stored as plain strings in ``runs.status`` (``RunStatus`` is a ``StrEnum``, so a member equals its
string). Which state may follow which is ``relay.runs.machine``.
"""
from __future__ import annotations

import enum


class RunStatus(enum.StrEnum):
    QUEUED = "queued"  # recorded, waiting for a worker
    SELECTING = "selecting"  # the selector is choosing tests
    RUNNING = "running"  # shards are executing
    PASSED = "passed"  # ran to the end, no new failures
    FAILED = "failed"  # ran to the end, new failures
    ERROR = "error"  # could not complete (bad upstream, a crash); may be resumed
    CANCELLED = "cancelled"  # stopped on request (dashboard, a newer push)
    TIMED_OUT = "timed_out"  # the sweeper found it selecting/running past the run timeout


# Not finished: a cancel still reaches it.
ACTIVE = frozenset({RunStatus.QUEUED, RunStatus.SELECTING, RunStatus.RUNNING})
# Working on it: the sweeper times these out when they take too long.
EXECUTING = frozenset({RunStatus.SELECTING, RunStatus.RUNNING})
# Over, whichever way: the run will not change again by itself.
FINISHED = frozenset({RunStatus.PASSED, RunStatus.FAILED, RunStatus.ERROR, RunStatus.CANCELLED,
                      RunStatus.TIMED_OUT})
# Ran to the end and judged: the only runs whose results serve as history and baselines.
COMPLETED = frozenset({RunStatus.PASSED, RunStatus.FAILED})
# Executing such a run again resumes it; a completed or cancelled run is returned as it is.
RESUMABLE = frozenset({RunStatus.QUEUED, RunStatus.SELECTING, RunStatus.RUNNING, RunStatus.ERROR,
                       RunStatus.TIMED_OUT})
