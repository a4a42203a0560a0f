"""The selector's own input error: the library knows nothing of the relay's CLI.

relay-cli turns it into one line on stderr and exit 2, like its own UserError.
"""
from __future__ import annotations


class SelectorError(ValueError):
    """Bad input to the selector (budget, shards, rules path, ground truth), with a hint to fix it."""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint

    def __str__(self) -> str:
        text = super().__str__()
        return f"{text} ({self.hint})" if self.hint else text
