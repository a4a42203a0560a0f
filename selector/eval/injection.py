"""Regression injection: one commit per injected change, each on top of the same base commit.

An injection is a list of source edits anchored on text that must occur exactly once in the
file (so an edit that no longer fits its upstream fails loudly instead of landing elsewhere),
or a file move. ``build_corpus`` applies each injection to a fresh checkout of the base, commits
it with a fixed author and date (same corpus, same SHAs) and names it ``inject/<name>``.
What an injection breaks is not declared here: the ground truth comes from running tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import git

from selector.errors import SelectorError

BRANCH_PREFIX = "inject/"
AUTHOR = git.Actor("Injected Change", "injected-change@example.invalid")
STAMP = datetime(2026, 7, 1, 12, 0, tzinfo=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S+0000")


class InjectionError(SelectorError):
    pass


@dataclass(frozen=True)
class Edit:
    """Replace ``anchor`` (which must occur once in ``path``) by ``replacement``."""

    path: str
    anchor: str
    replacement: str

    def apply(self, root: Path, injection: str) -> None:
        target = root / self.path
        if not target.is_file():
            raise InjectionError(f"injection {injection}: {self.path} does not exist at the base")
        text = target.read_text()
        count = text.count(self.anchor)
        if count != 1:
            first = self.anchor.strip().splitlines()[0] if self.anchor.strip() else repr(self.anchor)
            raise InjectionError(f"injection {injection}: {self.path}: anchor {first!r} found {count} times, expected once",
                                 hint="the upstream changed under the injection: re-anchor it")
        target.write_text(text.replace(self.anchor, self.replacement))


@dataclass(frozen=True)
class Move:
    """Rename a file (git sees a rename when the content stays close)."""

    path: str
    new_path: str

    def apply(self, root: Path, injection: str) -> None:
        source, target = root / self.path, root / self.new_path
        if not source.is_file() or target.exists():
            raise InjectionError(f"injection {injection}: cannot move {self.path} to {self.new_path}")
        target.parent.mkdir(parents=True, exist_ok=True)
        source.rename(target)


@dataclass(frozen=True)
class Injection:
    name: str  # unique, used in the branch name
    kind: str  # what sort of change (docs/eval.md lists the kinds)
    breaking: bool  # meant to break spyre; the run decides whether it does
    summary: str  # the commit message
    edits: tuple[Edit | Move, ...] = field(default=())

    @property
    def branch(self) -> str:
        return BRANCH_PREFIX + self.name

    @property
    def paths(self) -> list[str]:
        out: list[str] = []
        for edit in self.edits:
            out += [edit.path, edit.new_path] if isinstance(edit, Move) else [edit.path]
        return sorted(set(out))


@dataclass(frozen=True)
class Case:
    injection: Injection
    base_sha: str
    sha: str


def build_corpus(repo_path: str | Path, base_ref: str, injections: list[Injection]) -> list[Case]:
    """Commit each injection on top of ``base_ref`` as branch ``inject/<name>``; return the cases."""
    names = [i.name for i in injections]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InjectionError(f"injection names must be unique: {', '.join(duplicated)}")
    repo = git.Repo(repo_path)
    root = Path(repo.working_tree_dir)
    if repo.is_dirty(untracked_files=False):
        raise InjectionError(f"{root} has uncommitted changes", hint="commit or stash them first")
    start = repo.head.commit.hexsha if repo.head.is_detached else repo.active_branch.name
    base = repo.commit(base_ref).hexsha
    cases = []
    try:
        for injection in injections:
            repo.git.checkout("--detach", base)
            for edit in injection.edits:
                edit.apply(root, injection.name)
            repo.git.add("--all")
            repo.index.commit(f"{injection.summary}\n\ninjection: {injection.name} (kind {injection.kind})",
                              author=AUTHOR, committer=AUTHOR, author_date=STAMP, commit_date=STAMP)
            sha = repo.head.commit.hexsha
            repo.create_head(injection.branch, sha, force=True)
            cases.append(Case(injection, base, sha))
    finally:
        repo.git.reset("--hard")
        repo.git.checkout(start)
        repo.close()
    return cases
