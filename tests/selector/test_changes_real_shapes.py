"""Stage 1 on the file shapes real upstream has, checked against an independent plain AST diff."""
from __future__ import annotations

from tests.selector.plain_ast_diff import disagreements, plain_diff
from tests.selector.selector_git_helpers import changes_of, two_refs

LINEAR_OLD = '''
import torch
from torch.testing._internal.common_utils import TestCase


class TestCudaFuser(TestCase):
    def test_linear(self):
        self.assertEqual(torch.ones(2).sum().item(), 2)

    def test_fusion(self):
        pass
'''
LINEAR_NEW = LINEAR_OLD.replace("class TestCudaFuser", "class TestNvFuser")  # class renamed with its tests
UNRELATED = '''
import torch
from torch.testing._internal.common_utils import TestCase


class TestLazyModules(TestCase):
    def test_linear(self):
        self.assertEqual(torch.zeros(2).sum().item(), 0)
'''
BEFORE = {
    "test/test_module_level.py": "import torch\n\n\ndef test_plain():\n    assert torch.ones(1).item() == 1\n",
    "test/test_guarded.py": "import sys\nfrom torch.testing._internal.common_utils import TestCase\n\n"
                            "if sys.version_info >= (3, 8):\n    class TestGuarded(TestCase):\n"
                            "        def test_a(self):\n            pass\n\n"
                            "        if sys.platform != 'win32':\n            def test_posix(self):\n"
                            "                self.assertTrue(True)\n",
    "test/test_broken_later.py": "def test_fine():\n    pass\n",
    "test/test_latin1.py": "# caf\xe9\ndef test_bytes():\n    assert len(b'x') == 1\n",
    "test/test_cuda_fuser.py": LINEAR_OLD,
    "test/test_nested.py": "from torch.testing._internal.common_utils import TestCase\n\n\nclass Namespace:\n"
                           "    class TestInner(TestCase):\n        def test_inner(self):\n            pass\n",
    # upstream's test_jit_legacy.py shape: the tests of another file, run again under another setup
    "test/test_guarded_legacy.py": "import sys\nsys.argv.append('--legacy')\nfrom test_guarded import *  # noqa\n",
    "test/test_class_attr.py": "from torch.testing._internal.common_utils import TestCase\n\n\nclass TestAttr(TestCase):\n"
                               "    limit = 1\n\n    def test_limit(self):\n        self.assertEqual(self.limit, 1)\n",
}
AFTER = {
    "test/test_module_level.py": BEFORE["test/test_module_level.py"].replace("== 1", "== 1.0")
    + "\n\ndef test_added_plain():\n    pass\n",
    "test/test_guarded.py": BEFORE["test/test_guarded.py"].replace("self.assertTrue(True)", "self.assertTrue(1)"),
    "test/test_broken_later.py": "def test_fine(:\n    pass\n",
    "test/test_latin1.py": BEFORE["test/test_latin1.py"].replace("b'x'", "b'xy'").replace("== 1", "== 2"),
    "test/test_cuda_fuser.py": None,
    "test/test_nv_fuser.py": LINEAR_NEW,
    "test/test_lazy_modules.py": UNRELATED,
    "test/test_nested.py": BEFORE["test/test_nested.py"].replace("pass", "return None"),
    "test/test_class_attr.py": BEFORE["test/test_class_attr.py"].replace("limit = 1", "limit = 2"),
}


def _repo_and_report(tmp_path):
    from selector.changes import analyse
    from selector.upstream import open_upstream

    builder = two_refs(tmp_path / "up", {k: v.encode("latin-1") if "latin1" in k else v for k, v in BEFORE.items()},
                       {k: (v.encode("latin-1") if v is not None and "latin1" in k else v) for k, v in AFTER.items()})
    builder.symlink("test/test_alias.py", "test_module_level.py")
    builder.commit("symlink", tag="v2.14.1")
    source = open_upstream(str(builder.root), cache_dir=tmp_path / "cache")
    try:
        return builder.root, analyse(source, "v2.13.0", "v2.14.1")
    finally:
        source.close()


def test_every_real_file_shape_is_analysed_or_reported(tmp_path):
    root, report = _repo_and_report(tmp_path)
    changes = changes_of(report)
    assert changes["test/test_module_level.py::test_plain"] == "modified"
    assert changes["test/test_module_level.py::test_added_plain"] == "added"
    assert changes["test/test_guarded.py::TestGuarded::test_posix"] == "modified"  # inside if-blocks
    assert changes["test/test_latin1.py::test_bytes"] == "modified"  # not UTF-8: read with replacement
    assert changes["test/test_alias.py::test_plain"] == "added"  # a new symlink is its target's tests
    assert any("test/test_broken_later.py" in e and "syntax error" in e for e in report.errors)
    # the class moved with its tests: paired; a same-named test in an unrelated class is new
    assert changes["test/test_nv_fuser.py::TestNvFuser::test_linear"] == "moved"
    assert changes["test/test_lazy_modules.py::TestLazyModules::test_linear"] == "added"
    assert "test/test_cuda_fuser.py::TestCudaFuser::test_linear" not in {r.test_id for r in report.removed}


def test_stage1_agrees_with_an_independent_plain_ast_diff_up_to_documented_rules(tmp_path):
    root, report = _repo_and_report(tmp_path)
    plain = plain_diff(root, "v2.13.0", "v2.14.1")
    found = disagreements(plain, report)
    assert not [rule for rule in found if rule.startswith("unexplained")], found
    assert found["move/rename: new side (plain: added)"] == ["test/test_nv_fuser.py::TestNvFuser::test_fusion",
                                                             "test/test_nv_fuser.py::TestNvFuser::test_linear"]
    assert found["nested class (pytest does not collect it)"] == ["test/test_nested.py::Namespace::TestInner::test_inner"]
    assert "test/test_broken_later.py" in plain["broken"]
    assert found["star-imported test: pytest runs it in the importing file too (the plain diff lists it once)"] == [
        "test/test_guarded_legacy.py::TestGuarded::test_posix"]
    assert found["class-level change (decorators, bases, attributes, instantiate args)"] == [
        "test/test_class_attr.py::TestAttr::test_limit"]
