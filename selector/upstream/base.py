"""The interface every upstream source implements, and its one error type."""
from __future__ import annotations

import abc
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from selector.hunks import Hunk


class UpstreamError(ValueError):
    """A problem with the upstream (unreachable, unknown ref, no checkout): one line, with the fix."""


@dataclass(frozen=True)
class ChangedFile:
    """One file that differs between two commits.

    ``status`` is one of added, deleted, modified, renamed, copied, type_changed.
    ``old_path`` is set for renames and copies. ``old_mode``/``new_mode`` are git modes
    (``120000`` marks a symlink) when the source knows them.
    """

    path: str
    status: str
    old_path: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    binary: bool | None = None  # None: the source cannot tell

    @property
    def before_path(self) -> str:
        return self.old_path or self.path


class UpstreamSource(abc.ABC):
    """Read-only access to an upstream repository's history."""

    description: str = "upstream"

    @abc.abstractmethod
    def resolve(self, ref: str) -> str:
        """Turn ``2.13``, a tag, a branch, a SHA or ``pr/NUMBER`` into a full commit SHA."""

    @abc.abstractmethod
    def read_file(self, sha: str, path: str) -> str | None:
        """The text of ``path`` at ``sha``; None when missing or binary. Symlinks are followed."""

    @abc.abstractmethod
    def list_files(self, sha: str) -> list[str]:
        """Every file path in the tree at ``sha``, sorted."""

    @abc.abstractmethod
    def changed_files(self, a_sha: str, b_sha: str) -> list[ChangedFile]:
        """The files that differ from ``a_sha`` to ``b_sha`` (renames detected)."""

    def read_files(self, sha: str, paths: list[str]) -> dict[str, str | None]:
        """Several files at once; sources with a bulk path override this."""
        return {path: self.read_file(sha, path) for path in paths}

    def diff_hunks(self, a_sha: str, b_sha: str, paths: list[str]) -> dict[str, list[Hunk]] | None:
        """The hunks of each changed path (with their lines), if the source can diff in bulk."""
        return None

    def start_diff_hunks(self, a_sha: str, b_sha: str, paths: list[str]) -> Callable[[], dict[str, list[Hunk]] | None]:
        """``diff_hunks`` begun now and collected by calling the result (sources with a diff process
        let it run while the caller works)."""
        return lambda: self.diff_hunks(a_sha, b_sha, paths)

    def checkout(self, sha: str) -> Path:
        raise UpstreamError(f"{self.description} cannot provide a working tree; "
                            "point --upstream at a local checkout or a git URL to run tests")

    def close(self) -> None:
        """Release helper processes (persistent git cat-file)."""
