"""Stage 1 where static analysis cannot be sure: star imports, computed getattr, exec/eval."""
from __future__ import annotations

from tests.selector.selector_git_helpers import changes_of, run_stage1

HELPERS = "test/common_things.py"
OTHER_HELPERS = "test/other_things.py"
STAR = "test/test_star.py"
DYNAMIC = "test/test_dynamic.py"
PLAIN = "test/test_plain.py"

HELPER_MODULE = "def shared():\n    return 1\n\n\ndef other():\n    return 2\n"

STAR_TESTS = '''
from common_things import *
from torch.testing._internal.common_utils import TestCase


class TestStar(TestCase):
    def test_a(self):
        pass

    def test_b(self):
        pass
'''

DYNAMIC_TESTS = '''
import common_things
import other_things
from torch.testing._internal.common_utils import TestCase


def _lookup(name):
    return getattr(common_things, name)()


class TestDynamic(TestCase):
    def test_getattr_direct(self):
        for name in ("shared", "other"):
            getattr(common_things, name)()

    def test_getattr_through_helper(self):
        _lookup("shared")

    def test_getattr_constant_name(self):
        getattr(other_things, "unchanged")()

    def test_eval(self):
        eval("common_things.shared()")

    def test_model_eval_is_a_method(self):
        self.model.eval()

    def test_plain(self):
        pass
'''

PLAIN_TESTS = '''
import other_things
from torch.testing._internal.common_utils import TestCase


class TestPlain(TestCase):
    def test_eval_without_changed_imports(self):
        eval("1 + 1")
'''

BEFORE = {HELPERS: HELPER_MODULE, OTHER_HELPERS: "def unchanged():\n    return 0\n", STAR: STAR_TESTS,
          DYNAMIC: DYNAMIC_TESTS, PLAIN: PLAIN_TESTS}


def test_star_import_getattr_and_eval_of_a_changed_module_select_conservatively(tmp_path):
    report = run_stage1(tmp_path, BEFORE, {HELPERS: HELPER_MODULE.replace("return 2", "return 3")})
    assert changes_of(report) == {f"{STAR}::TestStar::test_a": "helper", f"{STAR}::TestStar::test_b": "helper",
                                  f"{DYNAMIC}::TestDynamic::test_getattr_direct": "helper",
                                  f"{DYNAMIC}::TestDynamic::test_getattr_through_helper": "helper",
                                  f"{DYNAMIC}::TestDynamic::test_eval": "helper"}
    star = report.candidate(f"{STAR}::TestStar::test_a").reasons[0]
    assert star.detail == ("conservative: test/test_star.py does `from common_things import *` and common_things "
                           "changed: names it brings in cannot be traced")
    assert (star.file, star.hunk) == (HELPERS, "@@ -6,1 +6,1 @@")  # the hunk that changed the module
    getattr_reason = report.candidate(f"{DYNAMIC}::TestDynamic::test_getattr_through_helper").reasons[0]
    assert getattr_reason.detail.startswith("conservative: calls getattr(common_things, <computed name>)")
    assert report.candidate(f"{DYNAMIC}::TestDynamic::test_eval").reasons[0].detail.startswith(
        "conservative: calls eval() and common_things, which its file imports, changed")


def test_an_unchanged_module_or_a_comment_only_change_selects_nothing_conservative(tmp_path):
    report = run_stage1(tmp_path, BEFORE, {OTHER_HELPERS: "def unchanged():\n    return 0  # same\n"})
    assert report.candidates == []  # nothing in other_things' definitions changed


def test_a_computed_getattr_on_a_changed_op_source_selects_the_test(tmp_path):
    functional = "torch/nn/functional.py"
    test = ('import torch.nn.functional as F\n\n\ndef test_every_activation():\n'
            '    for name in ("relu", "gelu"):\n        getattr(F, name)(1)\n\n\ndef test_other():\n    pass\n')
    report = run_stage1(tmp_path, {functional: "def relu(x):\n    return x\n", PLAIN: test},
                        {functional: "def relu(x):\n    return x * 1\n"})
    assert changes_of(report) == {f"{PLAIN}::test_every_activation": "helper"}
    assert "getattr(torch.nn.functional, <computed name>)" in report.candidates[0].reasons[0].detail
