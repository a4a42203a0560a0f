"""The selector's cache listed and pruned: other code versions go at once, the rest by last use."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

from selector.cache_dirs import current_versions, entries, prune
from selector.changes import analyse
from selector.upstream import open_upstream
from tests.selector.selector_git_helpers import two_refs

BEFORE = {"test/test_a.py": "def test_a():\n    pass\n", "test/test_b.py": "def test_b():\n    pass\n"}
AFTER = {"test/test_a.py": "def test_a():\n    assert 1\n"}
DAY = 86400


def filled_cache(tmp_path):
    """A cache made by stage 1 and a checkout of the to-ref, as a run makes it."""
    builder = two_refs(tmp_path / "up", BEFORE, AFTER)
    cache = tmp_path / "cache"
    source = open_upstream(str(builder.root), cache_dir=cache)
    try:
        analyse(source, "2.13", "2.14")
        source.checkout(source.resolve("2.14"))
    finally:
        source.close()
    return builder, cache


def age(path, days):
    then = time.time() - days * DAY
    os.utime(path, (then, then))


def test_a_runs_cache_is_listed_by_kind_with_its_current_versions(tmp_path):
    _, cache = filled_cache(tmp_path)
    found = {(e.kind, e.obsolete) for e in entries(cache)}
    assert found == {("inventory", False), ("diffs", False), ("worktrees", False)}
    versions = current_versions()
    assert {e.name for e in entries(cache) if e.kind in versions} == set(versions.values())
    assert all(e.bytes > 0 for e in entries(cache))


def test_prune_removes_other_code_versions_at_once_and_the_rest_by_last_use(tmp_path):
    builder, cache = filled_cache(tmp_path)
    current = cache / "inventory" / current_versions()["inventory"]
    shutil.copytree(current, cache / "inventory" / "0123456789ab")  # what an older selector left
    assert [e.name for e in prune(cache)] == ["0123456789ab"]
    assert current.is_dir()

    [checkout] = [e.path for e in entries(cache) if e.kind == "worktrees"]
    for entry in entries(cache):
        age(entry.path, 30)
    age(checkout, 1)
    assert sorted(e.kind for e in prune(cache, older_than_days=7)) == ["diffs", "inventory"]
    assert [e.path for e in entries(cache)] == [checkout]

    # A run uses the checkout again: its last use moves, and the next run rebuilds what was pruned.
    age(checkout, 30)
    source = open_upstream(str(builder.root), cache_dir=cache)
    try:
        assert source.checkout(source.resolve("2.14")) == checkout
        analyse(source, "2.13", "2.14")
    finally:
        source.close()
    assert prune(cache, older_than_days=7) == []
    assert {e.kind for e in prune(cache, everything=True)} == {"inventory", "diffs", "worktrees"}
    assert entries(cache) == []


def test_the_cache_verbs_list_as_json_and_prune(tmp_path, run_process):
    _, cache = filled_cache(tmp_path)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("RELAY_")}
    environ.update(RELAY_CACHE_DIR=str(cache), RELAY_DATA_DIR=str(tmp_path / "data"))

    def cli(*args):
        return run_process([sys.executable, "-m", "relay", "cache", *args], env=environ, capture_output=True,
                           text=True, timeout=120)

    listed = cli("list", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {row["kind"] for row in json.loads(listed.stdout)} == {"inventory", "diffs", "worktrees"}
    assert cli("prune").stdout.strip() == "nothing to prune"
    wrong = cli("prune", "--older-than", "-2")
    assert wrong.returncode == 2 and "--older-than must be a number of days >= 0, got -2" in wrong.stderr
    done = cli("prune", "--all")
    assert done.returncode == 0 and done.stdout.count("removed ") == 3
    assert json.loads(cli("list", "--json").stdout) == []
