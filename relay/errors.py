"""Exit statuses and the user-facing error every command turns into one clear line."""
from __future__ import annotations

import enum

from testdefs.errors import HintedError


class ExitStatus(enum.IntEnum):
    OK = 0
    NEW_FAILURES = 1  # the job ran and found new failures, or a check failed
    USAGE = 2  # usage, configuration or input error


class UserError(HintedError):
    """A mistake the user can fix: printed as one line (what, where, how to fix), no traceback."""

    exit_status = ExitStatus.USAGE
