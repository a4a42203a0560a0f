"""The GitHub compare source, through PyGithub, against a local server speaking the REST API."""
from __future__ import annotations

import pytest

from selector.changes import analyse
from selector.upstream import UpstreamError, open_upstream
from tests.selector.selector_git_helpers import RepoBuilder, device_test_file
from tests.selector.selector_github_api import FakeGitHub

BEFORE = device_test_file('''
class TestFoo(TestCase):
    @dtypes(torch.float32)
    def test_kept(self, device, dtype):
        self.assertEqual(1, 1)

    def test_changed(self, device):
        self.assertEqual(2, 2)
''', tail="instantiate_device_type_tests(TestFoo, globals())\n")


@pytest.fixture()
def github(tmp_path):
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"test/test_foo.py": BEFORE, "README.md": "hi\n"})
    builder.commit("one", tag="v2.13.0")
    builder.write({"test/test_foo.py": BEFORE.replace("assertEqual(2, 2)", 'assertEqual(2, len("ab"))'),
                   "test/test_bar.py": device_test_file("class TestBar(TestCase):\n    def test_new(self, device):\n        pass\n"),
                   "README.md": None})
    head = builder.commit("two", tag="v2.14.0")
    builder.repo.git.update_ref("refs/pull/5/head", head)
    with FakeGitHub(builder.root) as server:
        yield server, builder, head


def test_resolve_read_list_and_compare(github, tmp_path):
    server, builder, head = github
    source = open_upstream("github:pytorch/pytorch", cache_dir=tmp_path / "cache", github_token="t0ken",
                           github_api_url=server.url + "/api/v3")
    assert source.resolve("2.14") == head
    assert source.resolve("pr/5") == head
    base = source.resolve("v2.13.0")
    assert source.read_file(head, "test/test_bar.py").startswith("import torch")
    assert source.read_file(head, "README.md") is None
    assert source.list_files(base) == ["README.md", "test/test_foo.py"]
    changes = {c.path: c.status for c in source.changed_files(base, head)}
    assert changes == {"README.md": "deleted", "test/test_bar.py": "added", "test/test_foo.py": "modified"}
    assert any(r.startswith("/api/v3/repos/pytorch/pytorch/compare/") for r in server.requests)


def test_unknown_ref_lists_close_tags_and_branches(github, tmp_path):
    server, _, _ = github
    source = open_upstream("github:pytorch/pytorch", cache_dir=tmp_path, github_api_url=server.url)
    with pytest.raises(UpstreamError, match=r"unknown ref 'v2.14.1'.*closest refs: v2.14.0"):
        source.resolve("v2.14.1")
    with pytest.raises(UpstreamError, match="pull request 9 not found"):
        source.resolve("pr/9")
    with pytest.raises(UpstreamError, match="cannot provide a working tree"):
        source.checkout("0" * 40)


def test_unknown_repository_is_a_clear_error(github, tmp_path):
    server, _, _ = github
    with pytest.raises(UpstreamError, match=r"cannot open github:nobody/nothing .*HTTP 404"):
        open_upstream("github:nobody/nothing", cache_dir=tmp_path, github_api_url=server.url)


def test_stage1_over_the_api_matches_the_local_checkout(github, tmp_path):
    server, builder, _ = github
    remote = analyse(open_upstream("github:pytorch/pytorch", cache_dir=tmp_path, github_api_url=server.url),
                     "2.13", "2.14")
    local = analyse(open_upstream(str(builder.root), cache_dir=tmp_path), "2.13", "2.14")
    assert [(c.test_id, c.change) for c in remote.candidates] == [(c.test_id, c.change) for c in local.candidates]
    assert {(c.test_id, c.change) for c in remote.candidates} == {
        ("test/test_foo.py::TestFoo::test_changed", "modified"), ("test/test_bar.py::TestBar::test_new", "added")}


def test_a_compare_past_githubs_file_limit_is_completed_from_the_trees(tmp_path):
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"test/test_foo.py": BEFORE, "README.md": "hi\n", "docs/gone.md": "bye\n"})
    builder.commit("one", tag="v2.13.0")
    many = {f"torch/mod_{i:03}.py": f"x = {i}\n" for i in range(305)}
    builder.write({**many, "docs/gone.md": None, "README.md": "hello\n"})
    builder.commit("two", tag="v2.14.0")
    with FakeGitHub(builder.root) as server:
        source = open_upstream("github:pytorch/pytorch", cache_dir=tmp_path / "cache",
                               github_api_url=server.url)
        changes = {c.path: c.status for c in source.changed_files(source.resolve("2.13"), source.resolve("2.14"))}
    assert len(changes) == 307  # GitHub's compare lists only 300 of them
    assert changes["README.md"] == "modified" and changes["docs/gone.md"] == "deleted"
    assert changes["torch/mod_304.py"] == "added" and "test/test_foo.py" not in changes
    assert any("/git/trees/" in r for r in server.requests)
