"""Test files that star-import another test file run its tests: they are inventoried and selected with it."""
from __future__ import annotations

from tests.selector.selector_git_helpers import changes_of, run_stage1

JIT = "test/test_jit.py"
LEGACY = "test/test_jit_legacy.py"
OWN = "test/test_star_own.py"
PLAIN = "test/test_plain.py"

JIT_TEXT = '''import torch
from torch.testing._internal.common_utils import TestCase
from jit.test_tracer import TestTracer  # noqa: F401


def check_thing(x):
    return x + 1


def _private_check(x):
    return x


class TestJit(TestCase):
    def test_a(self):
        self.assertEqual(1, 1)

    def test_b(self):
        self.assertEqual(check_thing(1), 2)

    def test_gone(self):
        pass


class _Hidden(TestCase):
    def test_hidden(self):
        pass


def test_module_level():
    assert True
'''
LEGACY_TEXT = '''import sys
sys.argv.append("--jit-executor=legacy")
from test_jit import *  # noqa: F403

if __name__ == "__main__":
    run_tests()
'''
OWN_TEXT = '''from test_jit import *  # noqa: F403


class TestOwn(TestCase):
    def test_own(self):
        self.assertEqual(check_thing(0), 1)


class TestJit(TestCase):  # its own TestJit hides the imported one
    def test_local(self):
        pass
'''
PLAIN_TEXT = "def test_plain():\n    assert True\n"
TRACER = "test/jit/test_tracer.py"
TRACER_TEXT = ("from torch.testing._internal.common_utils import TestCase\n\n\n"
               "class TestTracer(TestCase):\n    def test_trace(self):\n        self.assertEqual(2, 2)\n")
BEFORE = {JIT: JIT_TEXT, LEGACY: LEGACY_TEXT, OWN: OWN_TEXT, PLAIN: PLAIN_TEXT, TRACER: TRACER_TEXT}


def test_a_star_importing_file_runs_and_is_selected_with_the_tests_it_imports(tmp_path):
    after = JIT_TEXT.replace("self.assertEqual(1, 1)", "self.assertEqual(1, 2)") \
        .replace("return x + 1", "return x + 2") \
        .replace("    def test_gone(self):\n        pass\n\n", "")
    report = run_stage1(tmp_path, BEFORE, {JIT: after})
    inventory = {p: sorted(t.test_id(p) for t in f.all_tests()) for p, f in report.inventory_to.files.items()}
    assert inventory[LEGACY] == [f"{LEGACY}::TestJit::test_a", f"{LEGACY}::TestJit::test_b",
                                 f"{LEGACY}::TestTracer::test_trace",  # test_jit imports it by name
                                 f"{LEGACY}::test_module_level"]  # _Hidden is not star-imported
    assert inventory[JIT] == [f"{JIT}::TestJit::test_a", f"{JIT}::TestJit::test_b", f"{JIT}::_Hidden::test_hidden",
                              f"{JIT}::test_module_level"]  # by-name imports are not copied into the importer
    assert f"{OWN}::TestOwn::test_own" in inventory[OWN] and f"{OWN}::TestJit::test_local" in inventory[OWN]
    assert f"{OWN}::TestJit::test_a" not in inventory[OWN]  # its own TestJit wins
    assert changes_of(report) == {
        f"{JIT}::TestJit::test_a": "modified", f"{JIT}::TestJit::test_b": "helper",
        f"{LEGACY}::TestJit::test_a": "modified", f"{LEGACY}::TestJit::test_b": "helper",
        f"{OWN}::TestOwn::test_own": "helper", f"{OWN}::TestJit::test_local": "helper"}
    legacy = report.candidate(f"{LEGACY}::TestJit::test_a").reasons[0]
    assert legacy.detail == (f"runs {JIT}::TestJit::test_a (its file star-imports test_jit): "
                             "test body or decorators changed")
    assert legacy.file == JIT and legacy.hunk == report.candidate(f"{JIT}::TestJit::test_a").reasons[0].hunk
    own = report.candidate(f"{OWN}::TestOwn::test_own").reasons[0]
    assert own.detail.startswith(f"conservative: {OWN} does `from test_jit import *` and test_jit changed")
    assert {r.test_id for r in report.removed} == {f"{JIT}::TestJit::test_gone", f"{LEGACY}::TestJit::test_gone"}


def test_a_body_only_change_in_the_imported_file_does_not_reach_the_importers_own_tests(tmp_path):
    after = JIT_TEXT.replace("self.assertEqual(1, 1)", "self.assertEqual(1, 2)")
    report = run_stage1(tmp_path, BEFORE, {JIT: after, TRACER: TRACER_TEXT.replace("(2, 2)", "(3, 3)")})
    assert changes_of(report) == {f"{JIT}::TestJit::test_a": "modified", f"{LEGACY}::TestJit::test_a": "modified",
                                  f"{TRACER}::TestTracer::test_trace": "modified",
                                  f"{LEGACY}::TestTracer::test_trace": "modified",
                                  f"{OWN}::TestTracer::test_trace": "modified"}  # not test_star_own's own tests
    assert report.candidate(f"{LEGACY}::TestTracer::test_trace").reasons[0].detail.startswith(
        f"runs {TRACER}::TestTracer::test_trace (its file star-imports test_jit)")


def test_the_importing_files_module_code_reaches_every_test_it_runs(tmp_path):
    after = LEGACY_TEXT.replace("legacy", "profiling")
    report = run_stage1(tmp_path, BEFORE, {LEGACY: after, OWN: OWN_TEXT.replace("check_thing(0), 1", "check_thing(1), 2")})
    assert changes_of(report) == {f"{LEGACY}::TestJit::test_a": "modified", f"{LEGACY}::TestJit::test_b": "modified",
                                  f"{LEGACY}::TestJit::test_gone": "modified", f"{LEGACY}::test_module_level": "modified",
                                  f"{LEGACY}::TestTracer::test_trace": "modified",
                                  f"{OWN}::TestOwn::test_own": "modified"}
    reason = report.candidate(f"{LEGACY}::TestJit::test_a").reasons[0]
    assert (reason.file, reason.hunk) == (LEGACY, "@@ -2,1 +2,1 @@")
    assert reason.detail == f"module-level code of {LEGACY} changed: it runs before every test it star-imports"
    comment_only = LEGACY_TEXT.replace("import sys\n", "import sys  # the executor is chosen by argv\n")
    assert run_stage1(tmp_path / "comment", BEFORE, {LEGACY: comment_only}).candidates == []


def test_tests_moved_out_of_a_file_that_now_star_imports_them_keep_their_id(tmp_path):
    # upstream 2.0's test_jit_cuda_fuser.py: its tests moved to _nvfuser/test_torchscript.py, star-imported back
    fuser = "test/test_fuser.py"
    impl = "test/_nv/test_impl.py"
    tests = ("from torch.testing._internal.common_utils import TestCase\n\n\n"
             "class TestFuser(TestCase):\n    def test_x(self):\n        self.assertEqual(1, 1)\n")
    report = run_stage1(tmp_path, {fuser: tests}, {fuser: "from _nv.test_impl import *  # noqa\n", impl: tests})
    assert changes_of(report) == {f"{impl}::TestFuser::test_x": "moved", f"{fuser}::TestFuser::test_x": "modified"}
    assert report.removed == []
    assert report.candidate(f"{fuser}::TestFuser::test_x").previous_id is None


def test_a_star_import_takes_only_the_names_of_a_listed_all(tmp_path):
    listed = JIT_TEXT.replace("import torch\n", 'import torch\n\n__all__ = ["TestJit", "_Hidden"]\n', 1)
    report = run_stage1(tmp_path, {**BEFORE, JIT: listed},
                        {JIT: listed.replace("self.assertEqual(1, 1)", "self.assertEqual(1, 2)")})
    legacy = sorted(t.test_id(LEGACY) for t in report.inventory_to.files[LEGACY].all_tests())
    assert legacy == [f"{LEGACY}::TestJit::test_a", f"{LEGACY}::TestJit::test_b", f"{LEGACY}::TestJit::test_gone",
                      f"{LEGACY}::_Hidden::test_hidden"]  # listed, so taken; test_module_level and TestTracer not
    assert f"{LEGACY}::TestJit::test_a" in changes_of(report)
    computed = listed.replace('__all__ = ["TestJit", "_Hidden"]', '__all__ = [n for n in dir() if n.startswith("Test")]')
    report = run_stage1(tmp_path / "computed", {**BEFORE, JIT: computed}, {PLAIN: PLAIN_TEXT + "\n"})
    assert f"{LEGACY}::test_module_level" in {t.test_id(LEGACY) for t in report.inventory_to.files[LEGACY].all_tests()}
