"""Ref resolution on a real local repository: releases, tags, branches, SHAs, pr/N, close matches."""
from __future__ import annotations

import pytest

from selector.upstream import UpstreamError, open_upstream
from tests.selector.selector_git_helpers import RepoBuilder


@pytest.fixture()
def upstream(tmp_path):
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"README.md": "one\n"})
    first = builder.commit("one", tag="v2.13.0", branch="release/2.13")
    builder.write({"README.md": "two\n"})
    second = builder.commit("two", branch="release/2.14")
    builder.write({"README.md": "three\n"})
    third = builder.commit("three", tag="v2.15.0-rc1")
    builder.repo.git.update_ref("refs/pull/42/head", second)
    source = open_upstream(str(builder.root), cache_dir=tmp_path / "cache")
    yield source, {"first": first, "second": second, "third": third}
    source.close()


def test_release_number_prefers_the_tag_then_the_release_branch(upstream):
    source, shas = upstream
    assert source.resolve("2.13") == shas["first"]  # tag v2.13.0
    assert source.resolve("2.14") == shas["second"]  # no v2.14.0 tag: branch release/2.14


def test_tags_branches_shas_and_pull_requests(upstream):
    source, shas = upstream
    assert source.resolve("v2.15.0-rc1") == shas["third"]
    assert source.resolve("main") == shas["third"]
    assert source.resolve("release/2.13") == shas["first"]
    assert source.resolve(shas["second"]) == shas["second"]
    assert source.resolve(shas["second"][:10]) == shas["second"]
    assert source.resolve("pr/42") == shas["second"]


def test_unknown_ref_names_the_closest_refs(upstream):
    source, _ = upstream
    with pytest.raises(UpstreamError) as caught:
        source.resolve("v2.14.0")
    message = str(caught.value)
    assert "unknown ref 'v2.14.0'" in message
    assert "closest refs:" in message and "release/2.14" in message
    assert isinstance(caught.value, ValueError)
    assert "\n" not in message


def test_unknown_pull_request_and_empty_ref(upstream):
    source, _ = upstream
    with pytest.raises(UpstreamError, match="unknown ref 'pr/7'"):
        source.resolve("pr/7")
    with pytest.raises(UpstreamError, match="empty ref"):
        source.resolve("  ")


def test_bad_upstream_specs_are_one_line_errors(tmp_path):
    with pytest.raises(UpstreamError, match="does not exist"):
        open_upstream(str(tmp_path / "missing"), cache_dir=tmp_path / "cache")
    (tmp_path / "plain").mkdir()
    with pytest.raises(UpstreamError, match="is not a git repository"):
        open_upstream(str(tmp_path / "plain"), cache_dir=tmp_path / "cache")
    with pytest.raises(UpstreamError, match="github:OWNER/REPO"):
        open_upstream("github:nope", cache_dir=tmp_path / "cache")
