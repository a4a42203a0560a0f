"""Exit statuses and the user-facing error every command turns into one clear line."""
from __future__ import annotations

import enum


class ExitStatus(enum.IntEnum):
    OK = 0
    NEW_FAILURES = 1  # the job ran and found new failures, or a check failed
    USAGE = 2  # usage, configuration or input error
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT, as shells report it)


class UserError(Exception):
    """A mistake the user can fix: printed as one line (what, where, how to fix), no traceback."""

    exit_status = ExitStatus.USAGE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text} ({self.hint})" if self.hint else text
