"""Stage 1 run twice on the same refs: the second run reads what the first kept, and reports the same."""
from __future__ import annotations

import pickle
import subprocess

from selector.changes import analyse
from selector.upstream import open_upstream
from tests.selector.selector_git_helpers import RepoBuilder, device_test_file, two_refs
from tests.selector.test_changes_data_files import DECLARED, NOTES, READER, YAML, T

OPINFO = "torch/testing/_internal/common_methods_invocations.py"
FUNCTIONAL = "torch/nn/functional.py"
OPS_TESTS = device_test_file('''
class TestOps(TestCase):
    @ops(op_db)
    def test_op(self, device, dtype, op):
        op(torch.ones(2, device=device, dtype=dtype))

    def test_softmax(self, device):
        torch.softmax(torch.ones(2, device=device), 0)
''', tail="instantiate_device_type_tests(TestOps, globals())\n")


def _opinfo(extra: str) -> str:
    return f"op_db = [\n    OpInfo('add', dtypes=floating_types()),\n    OpInfo('sin'{extra}),\n]\n"


def test_a_second_run_on_the_same_refs_scans_and_diffs_nothing_and_reports_the_same(tmp_path, monkeypatch):
    before = {T: READER, YAML: DECLARED, NOTES: "one\n", "test/test_ops.py": OPS_TESTS, OPINFO: _opinfo(""),
              FUNCTIONAL: "def softmax(x, dim):\n    return x.softmax(dim)\n"}
    after = {YAML: DECLARED + "- func: sub(Tensor self, Tensor other) -> Tensor\n", NOTES: "two\n",
             OPINFO: _opinfo(", supports_out=False"),
             FUNCTIONAL: "def softmax(x, dim):\n    '''Doc.'''\n    return x.softmax(dim)  # same code\n",
             "test/test_ops.py": OPS_TESTS.replace("torch.ones(2, device=device), 0", "torch.ones(3, device=device), 0")}
    builder = two_refs(tmp_path / "up", before, after)
    cache = tmp_path / "cache"
    reports, kept, commands = [], [], []
    started = subprocess.Popen

    def popen(args, *rest, **kwargs):  # every git process a run starts
        commands[-1].append([str(a) for a in args])
        return started(args, *rest, **kwargs)
    monkeypatch.setattr(subprocess, "Popen", popen)
    for _ in range(2):
        commands.append([])
        source = open_upstream(str(builder.root), cache_dir=cache)
        try:
            reports.append(analyse(source, "2.13", "2.14").to_json(with_inventory=True))
        finally:
            source.close()
        kept.append(sorted(p.relative_to(cache) for p in cache.rglob("*.pickle")))
    assert reports[0] == reports[1]
    assert kept[0] == kept[1]  # the warm run wrote nothing new: every scan, verdict and diff was kept
    assert any("diff" in c for c in commands[0]) and not any("diff" in c for c in commands[1])
    assert {c["test_id"] for c in reports[1]["candidates"]} >= {f"{T}::TestDeclared::test_declared",
                                                                 "test/test_ops.py::TestOps::test_softmax"}
    assert [f["no_op"] for f in reports[1]["files"] if f["path"] == FUNCTIONAL] == [True]


def test_a_diff_is_kept_per_pair_of_commits_and_read_back(tmp_path):
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"test/test_a.py": "def test_a():\n    pass\n"})
    first = builder.commit()
    builder.write({"test/test_a.py": "def test_a():\n    assert 1\n", "test/test_b.py": "x = 1\n"})
    second = builder.commit()
    source = open_upstream(str(builder.root), cache_dir=tmp_path / "cache")
    try:
        changed = source.changed_files(first, second)
        hunks = source.diff_hunks(first, second, ["test/test_a.py"])
        kept = sorted((tmp_path / "cache" / "diffs").rglob("*.pickle"))
        assert len(kept) == 2
        assert sorted(c.path for c in changed) == ["test/test_a.py", "test/test_b.py"]
        assert [h.added for h in hunks["test/test_a.py"]] == [["    assert 1"]]
        changed_file = next(p for p in kept if "-changed-" in p.name)
        changed_file.write_bytes(pickle.dumps(changed[:1]))  # what is kept is what a later run reads
        assert source.changed_files(first, second) == changed[:1]
        changed_file.write_bytes(b"damaged")  # a damaged file is computed again and rewritten
        assert source.changed_files(first, second) == changed
        assert pickle.loads(changed_file.read_bytes()) == changed
        source.changed_files(first, "main")  # a branch moves: nothing kept for it
        assert len(list((tmp_path / "cache" / "diffs").rglob("*.pickle"))) == 2
    finally:
        source.close()


def test_many_files_read_at_once_as_one_by_one(tmp_path):
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"test/a.py": "a = 1\n", "test/b.py": "b = 'é'\n", "test/bin.dat": b"\x00\x01binary",
                   "test/latin.py": "s = '\xe9'\n".encode("latin-1"), "test/empty.py": ""})
    builder.symlink("test/link.py", "a.py")
    sha = builder.commit()
    source = open_upstream(str(builder.root), cache_dir=tmp_path / "cache")
    try:
        paths = ["test/a.py", "test/b.py", "test/bin.dat", "test/latin.py", "test/empty.py", "test/link.py",
                 "test/missing.py"]
        texts = source.read_files(sha, paths)
        assert texts == {p: source.read_file(sha, p) for p in paths}
        assert texts["test/link.py"] == "a = 1\n" and texts["test/bin.dat"] is None and texts["test/missing.py"] is None
        assert texts["test/empty.py"] == "" and texts["test/latin.py"] == "s = '\ufffd'\n"
    finally:
        source.close()


def test_the_gc_pause_leaves_nothing_frozen_and_cycles_made_during_it_collectable():
    import gc
    import weakref

    from selector.gc_pause import paused_gc

    class Node:
        pass

    assert gc.isenabled()
    with paused_gc():
        assert not gc.isenabled()
        node = Node()
        node.me = node  # a cycle: only the collector frees it
        gone = weakref.ref(node)
        del node
    assert gc.isenabled() and gc.get_freeze_count() == 0
    gc.collect()
    assert gone() is None


def test_hunks_do_not_follow_the_users_diff_algorithm(tmp_path):
    """The same pair of commits gives the same hunks whatever `diff.algorithm` says: they are kept
    per pair, so a setting changed between two runs must not change what a run reads. (On this
    pair git's histogram algorithm cuts the hunks differently from myers.)"""
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"test/t.txt": "a\na\na\nb\nb\n"})
    first = builder.commit()
    builder.write({"test/t.txt": "a\nc\ny\na\na\ny\nb\nb\n"})
    second = builder.commit()

    def hunks(cache: str) -> list[tuple[int, int, int, int]]:
        source = open_upstream(str(builder.root), cache_dir=tmp_path / cache)
        try:
            return [(h.old_start, h.old_len, h.new_start, h.new_len)
                    for h in source.diff_hunks(first, second, ["test/t.txt"])["test/t.txt"]]
        finally:
            source.close()

    plain = hunks("plain")
    subprocess.run(["git", "config", "diff.algorithm", "histogram"], cwd=builder.root, check=True)
    assert hunks("histogram") == plain == [(1, 0, 2, 2), (3, 0, 6, 1)]
