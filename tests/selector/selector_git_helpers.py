"""Real git repositories for the selector tests, built with GitPython in tmp_path."""
from __future__ import annotations

import os
from datetime import datetime, timedelta, timezone
from pathlib import Path

import git

AUTHOR = git.Actor("Test Upstream", "test@example.invalid")


class RepoBuilder:
    """Write files, commit, tag: a small upstream history for one test."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.repo = git.Repo.init(self.root, initial_branch="main")
        self._clock = datetime(2026, 1, 1, tzinfo=timezone.utc)

    def write(self, files: dict[str, str | bytes | None]) -> None:
        """Write (str/bytes) or delete (None) files in the work tree and stage them."""
        written = []
        for path, content in files.items():
            target = self.root / path
            if content is None:
                self.repo.index.remove([path], working_tree=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
            written.append(path)
        if written:  # staged at once: one index write for a tree of hundreds of files, not one each
            self.repo.index.add(written)

    def symlink(self, path: str, target: str) -> None:
        link = self.root / path
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, link)
        self.repo.git.add(path)

    def move(self, old: str, new: str) -> None:
        self.repo.git.mv(old, new)

    def commit(self, message: str = "change", *, tag: str | None = None, branch: str | None = None) -> str:
        self._clock += timedelta(hours=1)
        stamp = self._clock.strftime("%Y-%m-%dT%H:%M:%S+0000")
        commit = self.repo.index.commit(message, author=AUTHOR, committer=AUTHOR,
                                        author_date=stamp, commit_date=stamp)
        if tag:
            self.repo.create_tag(tag)
        if branch:
            self.repo.create_head(branch)
        return commit.hexsha


def device_test_file(body: str, *, extra_imports: str = "", tail: str = "") -> str:
    """A device-generic test module around ``body`` (class definitions)."""
    return (
        "import torch\n"
        "from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests, ops, onlyCPU\n"
        "from torch.testing._internal.common_methods_invocations import op_db, unary_ufuncs\n"
        "from torch.testing._internal.common_utils import TestCase\n"
        f"{extra_imports}\n\n{body}\n{tail}"
    )


def two_refs(root: Path, before: dict, after: dict, *, moves: dict[str, str] | None = None) -> RepoBuilder:
    """A repository with ``before`` tagged v2.13.0 and ``after`` (plus git mv ``moves``) tagged v2.14.0."""
    builder = RepoBuilder(root)
    builder.write(before)
    builder.commit("before", tag="v2.13.0")
    for old, new in (moves or {}).items():
        builder.move(old, new)
    builder.write(after)
    builder.commit("after", tag="v2.14.0")
    return builder


def run_stage1(tmp_path: Path, before: dict, after: dict, *, rules=None, moves=None):
    from selector.changes import analyse
    from selector.upstream import open_upstream

    builder = two_refs(tmp_path / "up", before, after, moves=moves)
    source = open_upstream(str(builder.root), cache_dir=tmp_path / "cache")
    try:
        return analyse(source, "2.13", "2.14", rules=rules)
    finally:
        source.close()


def changes_of(report) -> dict[str, str]:
    return {c.test_id: c.change for c in report.candidates}
