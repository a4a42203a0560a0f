"""Write the demo upstream: a deterministic git history with v2.13.0 and v2.14.0.

Same arguments, same commits: author, committer and dates are fixed, so SHAs repeat.
"""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import git

from relay.demo.changeset import COMMITS, EXPECTED, Edit
from relay.demo.source_tree import LOGO_V213, SOURCE_FILES
from relay.demo.tests_tree import SCALABLE, TEST_FILES
from relay.errors import UserError

MANIFEST = "demo-changeset.json"
AUTHOR = git.Actor("Demo Upstream", "demo-upstream@example.invalid")
EPOCH = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)
LOGO_PATH = "docs/source/_static/logo.png"


class DemoError(UserError):
    pass


def scaled_copies(scale: int) -> dict[str, str]:
    """``--scale N``: N-1 extra copies of each file the change leaves alone, with their own class names."""
    out = {}
    for copy in range(2, scale + 1):
        for path in SCALABLE:
            text = TEST_FILES[path]
            for cls in _class_names(text):
                text = text.replace(cls + "(", f"{cls}Scaled{copy}(").replace(cls + ",", f"{cls}Scaled{copy},")
            out[path.replace(".py", f"_scaled{copy}.py")] = text
    return out


def _class_names(text: str) -> list[str]:
    return [line.split()[1].split("(")[0] for line in text.splitlines() if line.startswith("class ")]


def init_demo(dest: Path, *, scale: int = 1, force: bool = False) -> dict:
    """Create the demo upstream in ``dest``; return the manifest written to ``dest/demo-changeset.json``."""
    if scale < 1:
        raise DemoError(f"--scale must be 1 or more, got {scale}")
    dest = Path(dest)
    _prepare(dest, force)
    repo = git.Repo.init(dest, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", AUTHOR.name)
        config.set_value("user", "email", AUTHOR.email)
    clock = iter(EPOCH + timedelta(hours=i) for i in range(1000))

    _write(dest, SOURCE_FILES)
    (dest / LOGO_PATH).parent.mkdir(parents=True, exist_ok=True)
    (dest / LOGO_PATH).write_bytes(LOGO_V213)
    _commit(repo, list(SOURCE_FILES) + [LOGO_PATH], "Import the source tree", next(clock))
    tests = dict(TEST_FILES) | scaled_copies(scale)
    _write(dest, tests)
    _commit(repo, list(tests), "Device-generic tests for the demo ops", next(clock))
    _tag(repo, "v2.13.0", next(clock))
    repo.create_head("release/2.13")

    for message, edits in COMMITS:
        touched = [path for edit in edits for path in _apply(repo, dest, edit)]
        if message.startswith("CI and docs"):
            (dest / LOGO_PATH).write_bytes(LOGO_V213[:-16] + bytes(range(16)))
            touched.append(LOGO_PATH)
        _commit(repo, touched, message, next(clock))
    _tag(repo, "v2.14.0", next(clock))
    repo.create_head("release/2.14")

    manifest = {"from": "v2.13.0", "to": "v2.14.0", "scale": scale,
                "from_sha": repo.commit("v2.13.0").hexsha, "to_sha": repo.commit("v2.14.0").hexsha,
                "scaled_files": sorted(scaled_copies(scale)), **EXPECTED}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    with open(dest / ".git" / "info" / "exclude", "a") as exclude:
        exclude.write(f"/{MANIFEST}\n")
    repo.close()
    return manifest


def _prepare(dest: Path, force: bool) -> None:
    if dest.exists() and any(dest.iterdir()):
        if not force:
            raise DemoError(f"{dest} exists and is not empty", hint="pass --force to replace an earlier demo")
        if not (dest / MANIFEST).exists():
            raise DemoError(f"{dest} is not a demo upstream (no {MANIFEST}); refusing to delete it",
                            hint="choose an empty or new directory")
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)


def _write(root: Path, files: dict[str, str]) -> None:
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def _apply(repo: git.Repo, root: Path, edit: Edit) -> list[str]:
    target = root / edit.path
    if edit.rename_to:
        repo.index.move([edit.path, edit.rename_to])
        return [edit.rename_to]
    if edit.old is None and edit.new is None:
        repo.index.remove([edit.path], working_tree=True)
        return []
    if edit.old is None:
        _write(root, {edit.path: edit.new})
        return [edit.path]
    text = target.read_text()
    if text.count(edit.old) != 1:  # the change set and the tree disagree: a bug in this package
        raise AssertionError(f"demo edit of {edit.path} expects one occurrence of {edit.old[:60]!r}")
    target.write_text(text.replace(edit.old, edit.new))
    return [edit.path]


def _commit(repo: git.Repo, paths: list[str], message: str, when: datetime) -> None:
    if paths:
        repo.index.add(paths)
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S+0000")
    repo.index.commit(message, author=AUTHOR, committer=AUTHOR, author_date=stamp, commit_date=stamp)


def _tag(repo: git.Repo, name: str, when: datetime) -> None:
    """An annotated tag with a fixed date, so the tag object is the same on every run."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S+0000")
    repo.git.tag("-a", name, "-m", name, env={"GIT_COMMITTER_DATE": stamp})
