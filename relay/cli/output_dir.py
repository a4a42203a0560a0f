"""`--output DIR`: checked before any work starts, so a typo costs one line, not a run."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from relay.errors import UserError

HINT = "pass --output with a directory you can write to"


def writable_output(value: str | None, flag: str = "--output") -> Path | None:
    """``value`` as an absolute directory that exists (created if needed) and accepts files."""
    if value is None:
        return None
    if not value.strip() or "\0" in value:
        raise UserError(f"{flag} {value!r} is not a directory path", hint=HINT)
    path = Path(value).expanduser().absolute()
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {value}: is a file, not a directory", hint=HINT)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):  # permissions, read-only mounts, quotas: try it
            pass
    except OSError as exc:
        raise UserError(f"{flag} {value}: cannot write there: {exc.strerror or exc}", hint=HINT) from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {value}: cannot write there: permission denied", hint=HINT)
    return path
