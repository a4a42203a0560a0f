"""Write the demo upstream: a deterministic git history with v2.13.0 and v2.14.0.

The upstream is data installed with the package (``relay/demo/upstream/``): ``base/`` is the tree
at v2.13.0 as real files, ``changes/NN-*.patch`` are the commits to v2.14.0 (first line: the
message; the rest: a git diff), ``expected.json`` is the ground truth declared by hand with the
change. Same arguments, same commits: author, committer and dates are fixed, so SHAs repeat.
"""
from __future__ import annotations

import json
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

import git

from relay.errors import UserError

MANIFEST = "demo-changeset.json"
DATA = Path(__file__).with_name("upstream")
BASE, CHANGES, EXPECTED = DATA / "base", DATA / "changes", DATA / "expected.json"
# Test files the change does not edit: `--scale N` copies them to make the upstream bigger (the
# relu change in torch/nn/functional.py reaches test_unary_opinfo's relu variants, and its copies').
SCALABLE = ("test/test_torch.py", "test/test_modules.py", "test/test_unary_opinfo.py")
AUTHOR = git.Actor("Demo Upstream", "demo-upstream@example.invalid")
EPOCH = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


class DemoError(UserError):
    pass


def scaled_copies(scale: int) -> dict[str, str]:
    """``--scale N``: N-1 extra copies of each file the change leaves alone, with their own class names."""
    out = {}
    for copy in range(2, scale + 1):
        for path in SCALABLE:
            text = (BASE / path).read_text()
            for cls in _class_names(text):
                text = text.replace(cls + "(", f"{cls}Scaled{copy}(").replace(cls + ",", f"{cls}Scaled{copy},")
            out[path.replace(".py", f"_scaled{copy}.py")] = text
    return out


def _class_names(text: str) -> list[str]:
    return [line.split()[1].split("(")[0] for line in text.splitlines() if line.startswith("class ")]


def _base_files() -> list[str]:
    """The v2.13.0 tree's paths, sources first (they are committed before the tests)."""
    return sorted(str(p.relative_to(BASE)) for p in BASE.rglob("*") if p.is_file())


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

    shutil.copytree(BASE, dest, dirs_exist_ok=True)
    base = _base_files()
    _commit(repo, [p for p in base if not p.startswith("test/")], "Import the source tree", next(clock))
    scaled = scaled_copies(scale)
    _write(dest, scaled)
    _commit(repo, [p for p in base if p.startswith("test/")] + list(scaled), "Device-generic tests for the demo ops",
            next(clock))
    _tag(repo, "v2.13.0", next(clock))
    repo.create_head("release/2.13")

    for patch in sorted(CHANGES.glob("*.patch")):
        message = patch.read_text().split("\n", 1)[0]
        repo.git.apply(str(patch))
        repo.git.add("--all")
        _commit(repo, [], message, next(clock))
    _tag(repo, "v2.14.0", next(clock))
    repo.create_head("release/2.14")

    manifest = {"from": "v2.13.0", "to": "v2.14.0", "scale": scale,
                "from_sha": repo.commit("v2.13.0").hexsha, "to_sha": repo.commit("v2.14.0").hexsha,
                "scaled_files": sorted(scaled), **json.loads(EXPECTED.read_text())}
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


def _commit(repo: git.Repo, paths: list[str], message: str, when: datetime) -> None:
    if paths:
        repo.index.add(paths)
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S+0000")
    repo.index.commit(message, author=AUTHOR, committer=AUTHOR, author_date=stamp, commit_date=stamp)


def _tag(repo: git.Repo, name: str, when: datetime) -> None:
    """An annotated tag with a fixed date, so the tag object is the same on every run."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S+0000")
    repo.git.tag("-a", name, "-m", name, env={"GIT_COMMITTER_DATE": stamp})
