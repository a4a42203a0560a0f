"""Stage 1 follows helpers across modules, more than one module deep, and through a test file's own wrappers."""
from __future__ import annotations

from tests.selector.selector_git_helpers import changes_of, run_stage1

DEEP = "torch/testing/_internal/deep_helpers.py"  # module B: the one that changes
MIDDLE = "torch/testing/_internal/middle_helpers.py"  # module A: calls B
TOP = "test/top_helpers.py"  # calls A
TESTS = "test/test_chain.py"

DEEP_MODULE = "def reference(x):\n    return x + 1\n\n\ndef unrelated(x):\n    return x\n"
MIDDLE_MODULE = ("from torch.testing._internal.deep_helpers import reference\n\n\n"
                 "def check(x):\n    return reference(x) == x + 1\n\n\ndef alone(x):\n    return x\n")
TOP_MODULE = ("import torch.testing._internal.middle_helpers as middle\n\n\n"
              "def top_check(x):\n    return middle.check(x)\n")
TEST_FILE = '''
from torch.testing._internal.common_utils import TestCase
from torch.testing._internal.middle_helpers import check, alone
from top_helpers import top_check


def _wrapper(x):
    return check(x)


class TestChain(TestCase):
    def _check_method(self):
        return _wrapper(2)

    def test_through_method_and_wrapper(self):
        self.assertTrue(self._check_method())

    def test_two_modules_deep(self):
        self.assertTrue(check(1))

    def test_three_modules_deep(self):
        self.assertTrue(top_check(1))

    def test_through_own_wrapper(self):
        self.assertTrue(_wrapper(1))

    def test_unrelated_helper(self):
        alone(1)
'''
BEFORE = {DEEP: DEEP_MODULE, MIDDLE: MIDDLE_MODULE, TOP: TOP_MODULE, TESTS: TEST_FILE}


def test_a_helper_change_reaches_tests_through_helpers_in_other_modules(tmp_path):
    report = run_stage1(tmp_path, BEFORE, {DEEP: DEEP_MODULE.replace("x + 1", "x + 2")})
    assert changes_of(report) == {f"{TESTS}::TestChain::{name}": "helper" for name in
                                  ("test_two_modules_deep", "test_three_modules_deep", "test_through_own_wrapper",
                                   "test_through_method_and_wrapper")}
    for candidate in report.candidates:
        (reason,) = candidate.reasons
        assert (reason.file, reason.hunk) == (DEEP, "@@ -2,1 +2,1 @@")  # the hunk in module B, not the callers
    deep = report.candidate(f"{TESTS}::TestChain::test_three_modules_deep").reasons[0].detail
    assert deep == ("uses changed helper top_helpers.top_check; torch.testing._internal.deep_helpers.reference "
                    "changed (through top_helpers.top_check -> torch.testing._internal.middle_helpers.check)")
    method = report.candidate(f"{TESTS}::TestChain::test_through_method_and_wrapper").reasons[0].detail
    assert method.startswith("uses changed helper self._check_method; torch.testing._internal.deep_helpers.reference")


def test_an_unused_helper_change_in_a_deep_module_selects_nothing(tmp_path):
    report = run_stage1(tmp_path, BEFORE, {DEEP: DEEP_MODULE.replace("return x\n", "return -x\n")})
    assert report.candidates == []
