"""URL upstreams: blobless partial clone into the cache, reuse across runs, offline errors, worktrees."""
from __future__ import annotations

import shutil
import socket
from pathlib import Path

import git
import pytest

from selector.upstream import UpstreamError, open_upstream
from selector.upstream.clone import clone_dir
from tests.selector.selector_git_helpers import RepoBuilder


@pytest.fixture()
def served(tmp_path):
    """A source repository reachable by file:// URL that allows partial clones."""
    builder = RepoBuilder(tmp_path / "origin")
    builder.write({"test/test_a.py": "def test_a():\n    pass\n", "docs/logo.bin": b"\x89PNG\x00\x01"})
    builder.commit("first", tag="v2.13.0")
    builder.repo.git.config("uploadpack.allowFilter", "true")
    builder.repo.git.config("uploadpack.allowAnySHA1InWant", "true")
    return builder, f"file://{builder.root}"


def test_clone_is_blobless_and_reads_files(served, tmp_path):
    builder, url = served
    source = open_upstream(url, cache_dir=tmp_path / "cache")
    sha = source.resolve("2.13")
    clone = git.Repo(clone_dir(url, tmp_path / "cache"))
    assert clone.git.config("remote.origin.partialclonefilter") == "blob:none"
    assert source.list_files(sha) == ["docs/logo.bin", "test/test_a.py"]
    assert source.read_file(sha, "test/test_a.py").startswith("def test_a")
    assert source.read_file(sha, "docs/logo.bin") is None  # binary
    assert source.read_file(sha, "missing.py") is None
    source.close()


def test_cache_is_reused_and_refreshed(served, tmp_path):
    builder, url = served
    open_upstream(url, cache_dir=tmp_path / "cache").close()
    marker = clone_dir(url, tmp_path / "cache") / "kept-between-runs"
    marker.write_text("x")
    builder.write({"test/test_a.py": "def test_a():\n    assert 1\n"})
    new_sha = builder.commit("second", tag="v2.14.0")
    source = open_upstream(url, cache_dir=tmp_path / "cache")
    assert marker.exists()  # the same clone, fetched, not cloned again
    assert source.resolve("2.14") == new_sha
    assert "assert 1" in source.read_file(new_sha, "test/test_a.py")
    source.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_offline_clone_says_how_to_use_a_local_checkout(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/pytorch.git"
    with pytest.raises(UpstreamError) as caught:
        open_upstream(url, cache_dir=tmp_path / "cache")
    message = str(caught.value)
    assert message.startswith(f"cannot clone {url}")
    assert "--upstream PATH" in message and "\n" not in message
    assert not clone_dir(url, tmp_path / "cache").exists()  # no half-made clone left behind


def test_offline_with_a_cache_keeps_working_from_it(served, tmp_path):
    builder, url = served
    open_upstream(url, cache_dir=tmp_path / "cache").close()
    shutil.rmtree(builder.root)  # the remote is gone: fetching fails
    source = open_upstream(url, cache_dir=tmp_path / "cache")
    assert source.resolve("v2.13.0")
    with pytest.raises(UpstreamError, match="could not be refreshed"):
        source.resolve("v2.14.0")
    source.close()


def test_checkout_makes_a_worktree_and_reuses_it(served, tmp_path):
    builder, url = served
    source = open_upstream(str(builder.root), cache_dir=tmp_path / "cache")
    sha = source.resolve("v2.13.0")
    tree = source.checkout(sha)
    assert (tree / "test" / "test_a.py").read_text().startswith("def test_a")
    (tree / "scratch").write_text("left by a previous run")
    assert source.checkout(sha) == tree and (tree / "scratch").exists()
    builder.write({"test/test_b.py": "def test_b():\n    pass\n"})
    other = source.checkout(builder.commit("b"))
    assert other != tree and (other / "test" / "test_b.py").exists()
    source.close()


def test_bulk_reads_fetch_missing_blobs_in_one_request(served, tmp_path):
    builder, url = served
    builder.write({f"test/test_{i}.py": f"def test_{i}():\n    pass\n" for i in range(5)})
    sha = builder.commit("more")
    source = open_upstream(url, cache_dir=tmp_path / "cache")
    missing_before = [line for line in source.repo.git.rev_list("--objects", "--missing=print", sha).splitlines()
                      if line.startswith("?")]
    assert len(missing_before) >= 6  # blobless: file contents are not there yet
    paths = [f"test/test_{i}.py" for i in range(5)]
    texts = source.read_files(sha, paths)
    assert all(texts[p].startswith("def test_") for p in paths)
    missing_after = [line for line in source.repo.git.rev_list("--objects", "--missing=print", sha).splitlines()
                     if line.startswith("?")]
    assert len(missing_after) == len(missing_before) - 5
    source.close()


def test_relative_cache_dir_gives_an_absolute_worktree_outside_the_upstream(served, tmp_path, monkeypatch):
    builder, _ = served
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    source = open_upstream(str(builder.root), cache_dir=Path(".relay/cache"))
    tree = source.checkout(source.resolve("v2.13.0"))
    assert tree.is_absolute() and tree.is_relative_to(work / ".relay" / "cache")
    assert (tree / "test" / "test_a.py").exists()
    assert not (builder.root / ".relay").exists()
    source.close()
