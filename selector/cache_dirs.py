"""What the selector keeps under the cache dir, listed and pruned.

Four kinds of entry, each a directory whose modification time is its last use (opening one
touches it):

- ``inventory/<analyser version>/``: analysis results by blob id;
- ``diffs/<code version>/``: diffs kept per pair of commits;
- ``collect/<tree>-<environment>/``: stage 4's collection results for one test tree;
- ``worktrees/<upstream>-<key>/<commit>/``: checkouts of upstream commits (the largest).

An inventory or diff directory of another code version can never be read again: pruning removes
it whatever its age. Everything else goes by age, as a new upstream commit makes a new collection
and checkout, so an unattended relay's cache grows with every push until pruned.
"""
from __future__ import annotations

import datetime as dt
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

KINDS = ("inventory", "diffs", "collect", "worktrees")


@dataclass(frozen=True)
class CacheEntry:
    kind: str
    name: str
    path: Path
    bytes: int
    last_used: dt.datetime
    obsolete: bool  # made by another version of the code: never read again

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "path": str(self.path), "bytes": self.bytes,
                "last_used": self.last_used.isoformat(timespec="seconds"), "obsolete": self.obsolete}


def mark_used(path: Path) -> None:
    """Record a use of a cache entry (its directory's modification time); absent is fine."""
    try:
        os.utime(path)
    except OSError:
        pass


def current_versions() -> dict[str, str]:
    """The code versions this installation reads and writes, per versioned kind."""
    from selector.inventory.cache import analyser_version
    from selector.upstream.git_source import DIFF_CODE_VERSION

    return {"inventory": analyser_version(), "diffs": DIFF_CODE_VERSION}


def entries(cache_dir: Path) -> list[CacheEntry]:
    versions = current_versions()
    found = []
    for kind in KINDS:
        root = Path(cache_dir) / kind
        if not root.is_dir():
            continue
        directories = [d for d in root.iterdir() if d.is_dir()]
        if kind == "worktrees":  # one level more: the upstream, then its commits
            directories = [c for upstream in directories for c in upstream.iterdir() if c.is_dir()]
        for path in sorted(directories):
            name = str(path.relative_to(root))
            found.append(CacheEntry(kind, name, path, _size(path), _modified(path),
                                    obsolete=kind in versions and name != versions[kind]))
    return found


def prune(cache_dir: Path, *, older_than_days: float | None = None, everything: bool = False) -> list[CacheEntry]:
    """Remove obsolete entries, those unused for ``older_than_days`` days, or all; what was removed."""
    cutoff = None if older_than_days is None else _now() - dt.timedelta(days=older_than_days)
    removed = []
    for entry in entries(cache_dir):
        if everything or entry.obsolete or (cutoff is not None and entry.last_used < cutoff):
            shutil.rmtree(entry.path, ignore_errors=True)  # a checkout's git metadata goes at git's next prune
            removed.append(entry)
    return removed


def _size(path: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _modified(path: Path) -> dt.datetime:
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.timezone.utc)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
