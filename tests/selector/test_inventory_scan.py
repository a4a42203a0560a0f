"""The AST inventory: classes, tests, decorators, helpers, OpInfo names, variants; never imports."""
from __future__ import annotations

import pickle

import pytest

from selector.inventory import ALL_OPS, scan_file, scan_tree
from selector.inventory.cache import BlobCache
from selector.upstream import open_upstream
from tests.selector.selector_git_helpers import RepoBuilder, device_test_file
from tests.tiers import starts_processes

SOURCE = device_test_file('''
NAMES = ("add", "mul")


def _reference(x):
    return x


class TestFoo(TestCase):
    def _check(self, value):
        return _reference(value)

    @ops([op for op in op_db if op.name in NAMES], allowed_dtypes=(torch.float32, torch.float16))
    def test_named_ops(self, device, dtype, op):
        self._check(make_pair(1))

    @ops(op_db)
    def test_every_op(self, device, dtype, op):
        pass

    @ops(unary_ufuncs)
    def test_unary(self, device, dtype, op):
        pass

    @ops([op for op in op_db if op.name not in ("add",)])
    def test_all_but_add(self, device, dtype, op):
        pass

    @onlyCPU
    @dtypes(torch.float32, torch.float64)
    def test_cpu_only(self, device, dtype):
        helpers.shared()

    def test_plain(self, device):
        raise RuntimeError("never run: the scan does not import")


class NotATest:
    def helper(self):
        pass
''', extra_imports="from common_demo import make_pair\nimport helpers",
    tail='instantiate_device_type_tests(TestFoo, globals(), only_for=("cpu", "privateuse1"))\n'
         'raise SystemExit("importing this module would stop the interpreter")\n')


def test_classes_tests_and_decorators():
    inventory = scan_file("test/test_foo.py", SOURCE)
    assert inventory.error is None
    # a class without tests is kept for what it reaches (tests build it or inherit from it), with no tests
    assert [(c.name, len(c.tests), [h.name for h in c.helpers]) for c in inventory.classes][1:] == \
        [("NotATest", 0, ["helper"])]
    cls = inventory.classes[0]
    assert cls.instantiate == {"only_for": ["cpu", "privateuse1"]}
    tests = {t.name: t for t in cls.tests}
    assert list(tests) == ["test_named_ops", "test_every_op", "test_unary", "test_all_but_add", "test_cpu_only",
                           "test_plain"]
    assert tests["test_named_ops"].ops == ["add", "mul"]
    assert tests["test_named_ops"].variants == 4  # 2 ops x 2 allowed dtypes
    assert tests["test_every_op"].ops == [ALL_OPS] and tests["test_every_op"].variants is None
    assert tests["test_unary"].ops == ["@unary_ufuncs"]
    assert tests["test_all_but_add"].ops == [ALL_OPS]  # `not in` names exclusions, not the op list
    assert tests["test_cpu_only"].dtypes == ["float32", "float64"]
    assert tests["test_cpu_only"].restrictions == ["onlyCPU"]
    assert tests["test_cpu_only"].variants == 2
    assert tests["test_plain"].ops is None and tests["test_plain"].variants == 1
    assert tests["test_named_ops"].test_id("test/test_foo.py") == "test/test_foo.py::TestFoo::test_named_ops"


def test_helpers_each_test_uses_are_qualified():
    inventory = scan_file("test/test_foo.py", SOURCE)
    tests = {t.name: t for t in inventory.classes[0].tests}
    assert {"self._check", "common_demo.make_pair"} <= set(tests["test_named_ops"].uses)
    assert "helpers.shared" in tests["test_cpu_only"].uses
    assert "torch.testing._internal.common_device_type.onlyCPU" in tests["test_cpu_only"].uses
    assert [h.name for h in inventory.helpers] == ["_reference"]
    assert inventory.classes[0].helpers[0].uses == ["_reference"]


def test_syntax_error_is_reported_not_raised():
    inventory = scan_file("test/test_bad.py", "def test_x(:\n    pass\n")
    assert inventory.error.startswith("line 1:")
    assert inventory.all_tests() == []


def test_fingerprints_ignore_formatting_comments_and_docstrings():
    plain = scan_file("t.py", "class TestA(TestCase):\n    def test_a(self):\n        x = f(1, 2)\n")
    styled = scan_file("t.py", 'class TestA(TestCase):\n    def test_a(self):\n        """Doc."""\n'
                               "        # a comment\n        x = f(\n            1,\n            2,\n        )\n")
    changed = scan_file("t.py", "class TestA(TestCase):\n    def test_a(self):\n        x = f(1, 3)\n")
    assert plain.classes[0].tests[0].fingerprint == styled.classes[0].tests[0].fingerprint
    assert plain.classes[0].tests[0].fingerprint != changed.classes[0].tests[0].fingerprint


def test_scan_tree_reads_test_files_and_follows_symlinks(tmp_path):
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"test/test_foo.py": SOURCE, "test/common_demo.py": "def make_pair(n):\n    return n\n",
                   "torch/foo.py": "x = 1\n", "test/test_broken.py": "class (\n"})
    builder.symlink("test/test_alias.py", "test_foo.py")
    sha = builder.commit()
    inventory = scan_tree(open_upstream(str(builder.root), cache_dir=tmp_path / "c"), sha)
    assert sorted(inventory.files) == ["test/test_alias.py", "test/test_broken.py", "test/test_foo.py"]
    assert [t.name for t in inventory.files["test/test_alias.py"].all_tests()][0] == "test_named_ops"
    assert inventory.counts() == {"files": 3, "tests": 12, "op_tests": 8, "errors": 1}


def test_inventories_are_cached_by_blob_across_runs(tmp_path):
    builder = RepoBuilder(tmp_path / "up")
    builder.write({"test/test_foo.py": SOURCE, "test/test_other.py": "def test_x():\n    pass\n"})
    first = builder.commit()
    builder.write({"test/test_other.py": "def test_y():\n    pass\n"})
    second = builder.commit()
    source = open_upstream(str(builder.root), cache_dir=tmp_path / "cache")
    cold = scan_tree(source, first, cache_dir=source.cache_dir)
    entries = sorted((tmp_path / "cache" / "inventory").rglob("*.pickle"))
    assert len(entries) == 2
    damaged = BlobCache(source.cache_dir).path("tests", source.blob_id(first, "test/test_foo.py"), "test/test_foo.py")
    damaged.write_bytes(b"not a pickle")  # a damaged entry is rescanned, not trusted
    warm = scan_tree(source, second, cache_dir=source.cache_dir)
    assert len(list((tmp_path / "cache" / "inventory").rglob("*.pickle"))) == 3  # only the changed blob is new
    assert warm.files["test/test_foo.py"] == cold.files["test/test_foo.py"]
    assert pickle.loads(damaged.read_bytes()) == cold.files["test/test_foo.py"]  # and rewritten
    assert [t.name for t in warm.files["test/test_other.py"].all_tests()] == ["test_y"]
    source.close()


def _scan_in_daemon(items, queue):
    from selector.inventory.scan import scan_texts
    queue.put([len(f.all_tests()) for f in scan_texts(items)])


@pytest.fixture
@starts_processes
def fork_context():
    """Processes forked from this one; scan_texts on PARALLEL_MIN_FILES or more files also starts a pool."""
    import multiprocessing

    return multiprocessing.get_context("fork")


def test_many_files_scan_in_parallel_and_in_daemon_processes(fork_context):
    from selector.inventory.scan import PARALLEL_MIN_FILES, scan_texts

    items = [(f"test/test_{i}.py", f"class TestA{i}(TestCase):\n    def test_{i}(self):\n        pass\n")
             for i in range(PARALLEL_MIN_FILES + 2)]
    assert [len(f.all_tests()) for f in scan_texts(items)] == [1] * len(items)
    queue = fork_context.Queue()
    worker = fork_context.Process(target=_scan_in_daemon, args=(items, queue), daemon=True)
    worker.start()  # daemonic processes (Celery prefork workers) may not have children: scan in-process
    assert queue.get(timeout=60) == [1] * len(items)
    worker.join(timeout=60)
    assert worker.exitcode == 0


def test_both_versions_of_a_file_share_compiled_definitions_without_mixing_them_up():
    from selector.inventory.scan import run_scans, scan_tests

    # a constant tuple: with marshal's format 3+ its bytes depended on who else held the shared code
    same = ("    def test_same(self):\n        self.assertEqual((1, 2), (1, 2))\n"
            "        spec = ['rank:0/cuda:0', 'rank:1/cuda:1']\n\n")
    old = f"class TestA(TestCase):\n{same}    def test_edited(self):\n        self.assertEqual(1, 1)\n"
    new = f"import torch\n\n\nclass TestA(TestCase):\n{same}    def test_edited(self):\n        self.assertEqual(1, 2)\n"
    together = run_scans([(scan_tests, "test/test_a.py", old), (scan_tests, "test/test_a.py", new)])
    apart = [scan_file("test/test_a.py", old), scan_file("test/test_a.py", new)]  # no memo shared
    fingerprints = [{t.name: t.fingerprint for t in inv.all_tests()} for inv in together]
    assert fingerprints == [{t.name: t.fingerprint for t in inv.all_tests()} for inv in apart]
    assert fingerprints[0]["test_same"] == fingerprints[1]["test_same"]  # moved 3 lines down: same code
    assert fingerprints[0]["test_edited"] != fingerprints[1]["test_edited"]


@pytest.mark.parametrize(("source", "exported"), [
    ("x = 1\n", None),
    ('__all__ = ["TestA", "helper"]\n', ["TestA", "helper"]),
    ('__all__ = ("TestA",)\n__all__ += ["TestB"]\n', ["TestA", "TestB"]),
    ('__all__ = ["TestA"]\n__all__.extend(["TestB"])\n', None),  # changed in place: not followed
    ('__all__ = [n for n in dir() if n.startswith("Test")]\n', None),  # computed
    ('if X:\n    __all__ = ["TestA"]\nelse:\n    __all__ = ["TestB"]\n', None),  # depends on a branch
    ('__all__ += ["TestB"]\n', None),
    ('__all__ = ["TestA", NAME]\n', None),
])
def test_the_names_a_star_import_takes_come_from_a_written_out_all(source, exported):
    assert scan_file("test/test_x.py", source).exported == exported
