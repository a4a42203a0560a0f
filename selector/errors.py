"""The selector's own input error: the library knows nothing of the relay's CLI.

relay-cli turns it into one line on stderr and exit 2, like its own UserError.
"""
from __future__ import annotations

from testdefs.errors import HintedError


class SelectorError(HintedError, ValueError):
    """Bad input to the selector (budget, shards, rules path, ground truth), with a hint to fix it."""
