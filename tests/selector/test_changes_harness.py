"""Methods of harness classes in helper modules: a test depends on the methods it reaches, and only those."""
from __future__ import annotations

from tests.selector.selector_git_helpers import changes_of, run_stage1

HARNESS = "test/common_harness.py"
DEEP = "test/deep_helpers.py"
BASE = "test/common_base.py"
T = "test/test_h.py"

HARNESS_TEXT = '''def reference(x):
    return x + 1


class Harness:
    def __init__(self):
        self.scale = 1

    def check(self, x):
        return x * self.scale

    def other(self, x):
        return x

    def uses_reference(self, x):
        return reference(x)

    @classmethod
    def build(cls):
        return cls()


class HarnessMixin:
    def helper_method(self):
        return 1

    def unrelated_method(self):
        return 2
'''
DEEP_TEXT = "def reference_value():\n    return 1\n\n\ndef unused():\n    return 0\n"
BASE_TEXT = '''import deep_helpers
from torch.testing._internal.common_utils import TestCase


class Base(TestCase):
    def assert_thing(self):
        self.assertEqual(deep_helpers.reference_value(), 1)

    def assert_other(self):
        self.assertEqual(0, 0)


class Wrap:
    def run_it(self):
        return deep_helpers.reference_value()
'''
TESTS = '''from torch.testing._internal.common_utils import TestCase
from common_harness import Harness, HarnessMixin
from common_base import Base, Wrap


class TestH(TestCase, HarnessMixin):
    def test_check(self):
        Harness().check(1)

    def test_other(self):
        Harness().other(1)

    def test_build(self):
        Harness.build()

    def test_mixin(self):
        self.helper_method()

    def test_mixin_other(self):
        self.unrelated_method()

    def test_reference(self):
        Harness().uses_reference(1)


class TestB(Base):
    def test_thing(self):
        self.assert_thing()

    def test_other_thing(self):
        self.assert_other()

    def test_wrap(self):
        Wrap().run_it()
'''
BEFORE = {HARNESS: HARNESS_TEXT, DEEP: DEEP_TEXT, BASE: BASE_TEXT, T: TESTS}


def _run(tmp_path, old: str, new: str, path: str = HARNESS):
    text = BEFORE[path]
    assert old in text
    return changes_of(run_stage1(tmp_path, BEFORE, {path: text.replace(old, new)}))


def test_a_changed_harness_method_selects_only_the_tests_calling_it(tmp_path):
    assert _run(tmp_path / "check", "return x * self.scale", "return x * self.scale * 2") == \
        {f"{T}::TestH::test_check": "helper"}
    assert _run(tmp_path / "build", "return cls()", "return cls().__class__()") == {f"{T}::TestH::test_build": "helper"}


def test_an_inherited_mixin_method_selects_the_tests_calling_it_through_self(tmp_path):
    assert _run(tmp_path, "return 1\n\n    def unrelated", "return 10\n\n    def unrelated") == \
        {f"{T}::TestH::test_mixin": "helper"}


def test_a_method_calling_a_changed_module_helper_is_changed_too(tmp_path):
    report = run_stage1(tmp_path, BEFORE, {HARNESS: HARNESS_TEXT.replace("return x + 1", "return x + 2")})
    assert changes_of(report) == {f"{T}::TestH::test_reference": "helper"}
    reason = report.candidate(f"{T}::TestH::test_reference").reasons[0]
    assert reason.file == HARNESS and "common_harness.Harness.uses_reference" in reason.detail


def test_a_changed_constructor_reaches_every_user_of_the_class_not_the_mixin_tests(tmp_path):
    assert _run(tmp_path, "self.scale = 1", "self.scale = 2") == {
        f"{T}::TestH::{name}": "helper" for name in ("test_check", "test_other", "test_build", "test_reference")}


def test_base_and_harness_methods_in_unchanged_modules_are_followed_to_a_changed_helper(tmp_path):
    report = run_stage1(tmp_path, BEFORE, {DEEP: DEEP_TEXT.replace("return 1", "return 2")})
    assert changes_of(report) == {f"{T}::TestB::test_thing": "helper", f"{T}::TestB::test_wrap": "helper"}
    thing = report.candidate(f"{T}::TestB::test_thing").reasons[0]
    assert (thing.file, thing.hunk) == (DEEP, "@@ -2,1 +2,1 @@")
    assert "common_base.Base" in thing.detail and "assert_thing" in thing.detail


ROOT = "test/common_root.py"
MID = "test/common_mid.py"
DEEP_TEST = "test/test_deep.py"
ROOT_TEXT = '''from torch.testing._internal.common_utils import TestCase


class RootCase(TestCase):
    def setUp(self):
        super().setUp()

    def check_eq(self, a, b):
        self.assertEqual(a, b)

    def check_other(self):
        pass
'''
MID_TEXT = "from common_root import RootCase\n\n\nclass MidCase(RootCase):\n    def mid_helper(self):\n        return 1\n"
DEEP_TESTS = '''from common_mid import MidCase


class TestDeep(MidCase):
    def test_eq(self):
        self.check_eq(1, 1)

    def test_plain(self):
        self.assertTrue(True)
'''


def test_a_base_of_a_base_in_another_helper_module_is_followed(tmp_path):
    before = {ROOT: ROOT_TEXT, MID: MID_TEXT, DEEP_TEST: DEEP_TESTS}
    report = run_stage1(tmp_path, before, {ROOT: ROOT_TEXT.replace("self.assertEqual(a, b)", "self.assertIs(a, b)")})
    assert changes_of(report) == {f"{DEEP_TEST}::TestDeep::test_eq": "helper"}  # through common_mid.MidCase
    reason = report.candidate(f"{DEEP_TEST}::TestDeep::test_eq").reasons[0]
    assert reason.file == ROOT and "check_eq" in reason.detail
    report = run_stage1(tmp_path / "setup", before, {ROOT: ROOT_TEXT.replace("super().setUp()", "super().setUp()\n"
                                                                            "        self.x = 1")})
    assert changes_of(report) == {f"{DEEP_TEST}::TestDeep::test_eq": "helper", f"{DEEP_TEST}::TestDeep::test_plain": "helper"}
